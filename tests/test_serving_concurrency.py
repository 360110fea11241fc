"""Serving sized as it is served: replicas whose batches sum to the stated concurrency (the
last one partly filled), each timed at the batch it runs; a demand no allowed layout meets
ends the search with a reason instead of looping; disaggregated pools of several servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.factories.files import write_file
from tests.factories.requirements import deepseek_v3_service
from tests.support.validation_cases import _hgx
from tests.support.validation_serving import dgx

from gpusolve.estimate import Layout, evaluate, search_layouts
from gpusolve.estimate.serving import fill_replicas
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload


def _chat(**over: object) -> InferenceWorkload:
    w = make_workload(
        {
            "name": "chat",
            "kind": "inference",
            "model": ModelShape(preset="llama-3.1-70b"),
            "precision": "fp8",
            "prompt_tokens": 1000,
            "output_tokens": 500,
            "concurrency": 64,
            "disaggregation": "off",
            **over,
        }
    )
    assert isinstance(w, InferenceWorkload)
    return w


@pytest.mark.parametrize(
    ("sequences", "batch_max", "replicas", "batch"),
    [
        (64, 10, 7, 10),  # 7 replicas: ceil(64 / 7) = 10 each, 6 x 10 + 4
        (64, 26, 3, 22),  # 3 replicas: ceil(64 / 3) = 22, 2 x 22 + 20
        (64, 64, 1, 64),
        (9, 3, 3, 3),  # exactly full
        (10, 4, 3, 4),  # 3 replicas: ceil(10 / 3) = 4, 2 x 4 + 2
    ],
)
def test_the_concurrency_is_filled_in_turn(
    sequences: int, batch_max: int, replicas: int, batch: int
) -> None:
    assert fill_replicas(sequences, batch_max) == (replicas, batch)


def test_a_layout_holds_exactly_its_sequences() -> None:
    lay = Layout(1, 2, 1, 1, micro_batch=10, replicas=7, sequences=64)
    assert lay.total_sequences == 64
    assert lay.replica_batches() == [(6, 10), (1, 4)]
    # More replicas than sequences need: the rest stand idle, and say so.
    idle = Layout(1, 2, 1, 1, micro_batch=1, replicas=8, sequences=4)
    assert idle.replica_batches() == [(4, 1), (4, 0)]
    assert Layout(1, 2, 1, 1, micro_batch=8, replicas=2).replica_batches() == [(2, 8)]


def _one_replica_tokens(w: InferenceWorkload, tp: int, batch: int) -> float:
    """One full replica of TP `tp` decoding `batch` sequences, evaluated on its own."""
    est = evaluate(w, dgx("h100-sxm"), Layout(1, tp, 1, 1, micro_batch=batch), Params())
    return est.tokens_per_s


def test_an_explicit_partly_filled_layout_sums_what_each_replica_runs() -> None:
    w = _chat(concurrency=64)
    lay = Layout(3, 2, 1, 1, micro_batch=10, replicas=7, sequences=64)
    est = evaluate(w, dgx("h100-sxm"), lay, Params())
    by_hand = 6 * _one_replica_tokens(w, 2, 10) + _one_replica_tokens(w, 2, 4)
    assert est.tokens_per_s == pytest.approx(by_hand, rel=1e-9)
    # The 70 sequences of 7 full replicas do not exist: 64 deliver less.
    assert est.tokens_per_s < 7 * _one_replica_tokens(w, 2, 10)
    assert est.serving is not None and est.serving.sequences == 64
    assert not any("fewer than the 64" in r for r in est.reasons)


def test_a_concurrency_of_64_is_served_by_batches_summing_to_64() -> None:
    # 70B FP8 on H100 under a 13 ms TPOT: a replica runs fewer than 64 sequences, so the
    # concurrency spreads over replicas whose batches do not divide it evenly.
    w = _chat(tpot_ms=13)
    result = search_layouts(w, dgx("h100-sxm"), Params(), max_nodes=16, every_size=True)
    assert result.feasible
    partial = 0
    for est in result.feasible:
        v = est.serving
        assert v is not None
        groups = list(v.replica_batches)
        assert sum(n * b for n, b in groups) == 64 == v.sequences
        assert sum(n for n, _ in groups) == est.layout.replicas
        assert all(b <= v.max_batch for _, b in groups)
        by_hand = sum(n * _one_replica_tokens(w, est.layout.tp, b) for n, b in groups if b)
        assert est.tokens_per_s == pytest.approx(by_hand, rel=1e-9)
        partial += len(groups) > 1
    assert partial  # at least one layout has its last replica partly filled


# ------------------------------------------------------------------ bounded searches


@pytest.mark.parametrize("mode", ["off", "only", "auto"])
def test_a_demand_grown_without_bound_is_infeasible_not_a_hang(mode: str) -> None:
    # A schedule growing x1000 a month reaches demands no validation bound applies to (the
    # planner scales a validated workload): every replica loop stops at what the allowed
    # servers hold and says so.
    w = _chat(concurrency=64, target_tokens_per_s=2000.0, disaggregation=mode)
    for conc, target in ((64 * 1000**3, 2000.0 * 1000**3), (10**300, 1e300), (64, 1e300)):
        grown = w.model_copy(update={"concurrency": conc, "target_tokens_per_s": target})
        result = search_layouts(grown, dgx("h100-sxm"), Params(), max_nodes=16)
        assert result.feasible == []
        assert result.rejections
        text = " ".join(result.rejections)
        assert "more than the" in text or "cannot" in text
        assert all(len(r) < 1000 for r in result.rejections)  # no 300-digit numbers


def test_a_tokens_target_beyond_the_allowed_servers_is_rejected_with_figures() -> None:
    w = _chat(concurrency=None, target_tokens_per_s=2000.0)
    grown = w.model_copy(update={"target_tokens_per_s": 1e15})
    result = search_layouts(grown, dgx("h100-sxm"), Params(), max_nodes=4)
    assert result.feasible == []
    assert any(
        "1e+15 tokens/s" in r and "replica(s) the allowed nodes hold" in r
        for r in result.rejections
    )


# ------------------------------------------------------------------ disaggregated pools


H800 = _hgx("h800-sxm", 400, 400)  # HGX H800: NVLink 400 GB/s, 8 x 400 Gb/s InfiniBand


def test_deepseek_v3_on_h800_disaggregated_gets_multi_server_pools() -> None:
    # 671B parameters in FP8 are 671 GB of weights; a server holds 8 x 80 GB = 640 GB, so no
    # replica of either pool fits one server: both pools span servers.
    result = search_layouts(deepseek_v3_service(), H800, Params(), max_nodes=32)
    (est,) = result.feasible
    v = est.serving
    assert v is not None and v.disaggregated is not None
    pools = v.disaggregated
    assert pools.decode_nodes >= 2 and pools.prefill_nodes >= 2
    assert pools.decode_tp * pools.decode_pp > 8 and pools.prefill_tp * pools.prefill_pp > 8
    assert est.gpus == pools.prefill_gpus + pools.decode_gpus
    assert est.nodes == pools.prefill_nodes + pools.decode_nodes
    assert v.sequences == 256
    assert v.ttft_s <= 3.0 and v.tpot_s <= 0.050
    assert "infiniband" in pools.link


def test_an_explicit_multi_server_layout_is_the_decode_pool(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reqs = write_file(
        tmp_path,
        "workloads:\n"
        "  - name: ds\n"
        "    kind: inference\n"
        "    model: {preset: deepseek-v3}\n"
        "    precision: fp8\n"
        "    prompt_tokens: 2000\n"
        "    output_tokens: 500\n"
        "    concurrency: 256\n"
        "    tpot_ms: 50\n"
        "    ttft_ms: 3000\n"
        "    disaggregation: only\n",
    )
    res = gpusolve(
        "estimate", str(reqs), "--card", "h800-sxm", "--gpus", "32", "--tp", "8", "--pp", "4",
        "--format", "json",
    )  # fmt: skip
    assert res.code == 0, res.err
    (config,) = json.loads(res.out)["workloads"][0]["configs"]
    pools = config["serving"]["disaggregated"]
    assert pools is not None  # not silently the aggregated layout
    assert (pools["decode_tp"], pools["decode_pp"], pools["decode_replicas"]) == (8, 4, 1)
    assert pools["decode_nodes"] == 4
    assert config["gpus"] == pools["decode_gpus"] + pools["prefill_gpus"]
