"""What the candidates keep per placement: at the market scale (a catalogue sixteen times
the shipped one) there are hundreds of thousands of placements, so nothing that can be
one shared object may be one object each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.shipped import ROOT

from gpusolve.candidates import layout_cache
from gpusolve.candidates.generate import build_candidates
from gpusolve.candidates.layout_memo import layouts
from gpusolve.candidates.records import Candidates
from gpusolve.estimate.hardware import Hardware
from gpusolve.load import load_catalog
from gpusolve.models.policy import Charge, WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.plan.inputs import prepare_run
from gpusolve.rules import policy
from gpusolve.rules.policy import RulesPolicy, evaluate_policies


def test_placements_that_break_nothing_share_one_empty_set() -> None:
    data = yaml.safe_load((ROOT / "examples" / "finetune-7b-deadline.yaml").read_text())
    reqs = Requirements.model_validate(data)
    catalog = load_catalog().catalog
    policies, _ = evaluate_policies(reqs, catalog)
    instance = build_candidates(reqs, catalog, policies).instance
    untagged = [p for o in instance.owned for p in o.placements if not p.violates]
    assert len({id(p) for p in untagged}) > 1
    # CPython makes a new empty frozenset per `frozenset(())` call: one each would be
    # 216 bytes a placement.
    assert len({id(p.violates) for p in untagged}) == 1


def _candidates(example: str) -> tuple[Candidates, dict[str, WorkloadPolicy]]:
    data = yaml.safe_load((ROOT / "examples" / example).read_text())
    reqs = Requirements.model_validate(data)
    catalog = load_catalog().catalog
    policies, _ = evaluate_policies(reqs, catalog)
    return build_candidates(reqs, catalog, policies), policies


def test_equal_site_charges_are_one_object_and_sum_to_the_placement() -> None:
    cand, _ = _candidates("finetune-7b-deadline.yaml")
    by_value: dict[tuple[Charge, ...], set[int]] = {}
    for option in cand.instance.owned:
        site_charges = cand.meta[option.key].site_charges
        for charged in site_charges.values():
            assert charged, "a site without charges is left out, not stored as ()"
            by_value.setdefault(charged, set()).add(id(charged))
        for p in option.placements:
            charged = site_charges.get(p.site, ())
            # By definition: the placement's penalty is its site's charges, and its share
            # terms are (money, share) of those priced on a share of the servers' price.
            assert p.penalty == sum(c.amount for c in charged)
            assert p.penalty_shares == tuple((c.money, c.share) for c in charged if c.share)
    assert by_value, "the example's site preferences charge some placements"
    assert all(len(ids) == 1 for ids in by_value.values())


def test_layout_facts_dropped_early_give_the_same_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept, _ = _candidates("chat-70b-aggregated.yaml")
    monkeypatch.setattr(policy, "LAYOUT_FACTS_KEPT", 1)
    again, policies = _candidates("chat-70b-aggregated.yaml")
    # Each layout is converted again whenever it is asked about after another one.
    assert all(len(p._layouts) <= 1 for p in policies.values() if isinstance(p, RulesPolicy))
    assert again.instance.owned == kept.instance.owned
    assert again.instance.cloud == kept.instance.cloud


def test_placements_have_no_per_instance_dict() -> None:
    assert not hasattr(ir.Placement("site"), "__dict__")


def _fine_tune_on_three_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Any, list[Any], Path]:
    """The fine-tune example's run, its workload, three 8-GPU servers and the layout cache's
    folder under a private cache home, nothing held from another test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    layout_cache._new.clear()
    run = prepare_run(ROOT / "examples" / "finetune-7b-deadline.yaml", [], [])
    servers = [s for s in run.catalog.servers.values() if s.gpus == 8][:3]
    return run, run.reqs.workloads[0], servers, tmp_path / "gpusolve" / "layouts"


def test_searches_are_written_once_enough_are_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout_cache, "_PENDING_MAX", 2)
    run, w, servers, folder = _fine_tune_on_three_servers(tmp_path, monkeypatch)
    try:
        with layout_cache.kept_between_runs():
            for n, server in enumerate(servers, start=1):
                hw = Hardware.from_server(server, run.catalog.cards[server.card])
                first = layouts(w, hw, run.policies[w.name].params, max_nodes=2, every_size=True)
                on_disk = len(list(folder.iterdir())) if folder.exists() else 0
                # Every second search writes the two held, and none is held after.
                assert (on_disk, len(layout_cache._new)) == (n // 2 * 2, n % 2)
                again = layouts(w, hw, run.policies[w.name].params, max_nodes=2, every_size=True)
                assert again == first
    finally:
        layout_cache._new.clear()


def test_searches_written_early_stay_until_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruning to the newest files waits for the run's end: a search written early may be
    asked again later in the same run."""
    monkeypatch.setattr(layout_cache, "_PENDING_MAX", 1)
    monkeypatch.setattr(layout_cache, "_MAX_FILES", 1)
    run, w, servers, folder = _fine_tune_on_three_servers(tmp_path, monkeypatch)
    try:
        with layout_cache.kept_between_runs():
            for server in servers:
                hw = Hardware.from_server(server, run.catalog.cards[server.card])
                layouts(w, hw, run.policies[w.name].params, max_nodes=2, every_size=True)
            assert len(list(folder.iterdir())) == 3
            layout_cache.save()  # what the run's end does
            assert len(list(folder.iterdir())) == 1
    finally:
        layout_cache._new.clear()
