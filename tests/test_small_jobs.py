"""A job too small to buy servers for keeps every rental that fits the work (issue 39).

A 7B full fine-tune of 3e9 tokens rented one 8 x H800 instance; the same job of 1e6 or
2e6 tokens found no rental at all: a run of two steps saves one 94 GB checkpoint at its
end, a large share of seconds of training, and H16's limit on that share rejected every
layout. The rentals that fit the big job must fit the small one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.shipped import example

from gpusolve.candidates.filters import SHORT_RUN, ShortRunPolicy
from gpusolve.candidates.prepare import prepare
from gpusolve.plan.inputs import prepare_run


def _job(tmp_path: Path, tokens: float) -> Path:
    doc = example("finetune-7b-deadline.yaml")
    doc["workloads"][0]["tokens"] = tokens
    path = tmp_path / f"ft-{tokens:g}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _rentals(path: Path) -> tuple[set[tuple[str, int]], dict[str, str], Any]:
    inputs = prepare_run(path, [], [])
    prepared = prepare(inputs.reqs, inputs.catalog, inputs.policies)
    cloud = {(c.offer, c.instances) for c in prepared.cand.instance.cloud}
    return cloud, prepared.small, prepared


@pytest.fixture(scope="module")
def big_job_rentals(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, int]]:
    cloud, small, _ = _rentals(_job(tmp_path_factory.mktemp("big"), 3e9))
    assert not small and ("cloud-8x-h800-shanghai", 1) in cloud
    return cloud


@pytest.mark.parametrize("tokens", [1e6, 2e6, 1000])
def test_a_small_job_keeps_the_rentals_of_the_big_one(
    tokens: float, big_job_rentals: set[tuple[str, int]], tmp_path: Path
) -> None:
    cloud, small, prepared = _rentals(_job(tmp_path, tokens))
    assert small, "the job is small (minutes of work): no servers are bought for it"
    assert not prepared.cand.instance.owned
    # Every offer the big job can rent, and the big job's own rental (one 8 x H800
    # instance). Larger instance counts stay only while they are faster (the layout
    # search's `every_size`): for two steps of work they are not, and cost more.
    offers = {offer for offer, _ in cloud}
    assert {offer for offer, _ in big_job_rentals} <= offers
    assert ("cloud-8x-h800-shanghai", 1) in cloud


def test_only_the_small_workloads_lose_the_stall_limit(tmp_path: Path) -> None:
    inputs = prepare_run(_job(tmp_path, 1e6), [], [])
    policy = ShortRunPolicy(inputs.policies["ft-7b"])
    assert policy.params.checkpoint_stall_max_fraction == 1.0
    assert policy.param_origin("checkpoint_stall_max_fraction") == SHORT_RUN
    # everything else is the rules' own
    assert policy.params.headroom == inputs.policies["ft-7b"].params.headroom
    assert inputs.policies["ft-7b"].params.checkpoint_stall_max_fraction == 0.05


def test_the_small_job_plans_a_rental(gpusolve: Any, tmp_path: Path) -> None:
    result = gpusolve("plan", "-q", str(_job(tmp_path, 2e6)), "--time-limit", "5")
    assert result.code == 0, result.err + result.out
    assert ": rent " in result.out and "too small to buy servers for" in result.out
