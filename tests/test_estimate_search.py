"""search_layouts: smallest feasible layouts, deadlines, rejections, inference replicas."""

from __future__ import annotations

from tests.factories.hardware import A100_80, H100, L40S, RTX4090, hgx, pcie_box
from tests.factories.requirements import preset_workload

from gpusolve.estimate import search_layouts
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, Workload, make_workload


def _ft(**over: object) -> Workload:
    return preset_workload(
        "llama-2-7b",
        **{
            "name": "ft-7b",
            "kind": "full_finetune",
            "tokens": 2e9,
            "seq_len": 2048,
            "global_batch": 64,
            **over,
        },
    )


def test_h14_7b_full_finetune_needs_more_than_one_80gb_card() -> None:
    # H14: a 7B full fine-tune (BF16, ≥ 112 GB) cannot run on one 80 GB card; 8 × 80 GB
    # with ZeRO can. The smallest configuration found shards or pipelines over ≥ 2 GPUs.
    res = search_layouts(_ft(), hgx(A100_80), Params(), max_nodes=1, whole_nodes=False)
    assert res.feasible
    assert res.feasible[0].gpus >= 2
    assert any("1 GPU(s)" in r and "needs" in r for r in res.rejections)


def test_deadline_stops_at_the_first_node_count_that_meets_it() -> None:
    res = search_layouts(_ft(deadline_hours=12), hgx(A100_80), Params(), max_nodes=8)
    assert res.feasible[-1].meets_deadline
    assert all(not e.meets_deadline for e in res.feasible[:-1])
    assert res.best is res.feasible[-1]
    assert res.best.time_to_train_h is not None and res.best.time_to_train_h <= 12
    times = [e.time_to_train_s for e in res.feasible]
    assert times == sorted(times, reverse=True)  # each larger size is strictly faster


def test_unreachable_deadline_is_feasible_but_slow_and_explained() -> None:
    res = search_layouts(_ft(deadline_hours=0.01), hgx(A100_80), Params(), max_nodes=4)
    assert res.feasible and not any(e.meets_deadline for e in res.feasible)
    assert any(r.startswith("deadline of 0.01 h not met") for r in res.rejections)


def test_without_a_deadline_the_first_feasible_size_is_returned() -> None:
    res = search_layouts(_ft(), hgx(H100), Params(), max_nodes=8)
    assert len(res.feasible) == 1 and res.feasible[0].nodes == 1


def test_70b_on_one_node_is_rejected_with_numbers() -> None:
    w = _ft(model=ModelShape(preset="llama-2-70b"), name="ft-70b")
    res = search_layouts(w, hgx(L40S, fabric_gbps_per_gpu=0), Params(), max_nodes=1)
    assert not res.feasible
    assert len(res.rejections) == 1
    assert "needs" in res.rejections[0] and "GB per GPU" in res.rejections[0]


def test_multi_node_can_be_disabled() -> None:
    w = _ft(model=ModelShape(preset="llama-2-70b"), name="ft-70b", deadline_hours=10)
    res = search_layouts(w, hgx(H100), Params(allow_multi_node=False), max_nodes=16)
    assert all(e.nodes == 1 for e in res.feasible)


def test_lora_fits_one_gpu_when_partial_nodes_are_allowed() -> None:
    # H38: LoRA 7B ≈ 42 GB → one 80 GB card.
    w = make_workload(name="lora", kind="lora", model=ModelShape(params_b=7), tokens=1e8)
    res = search_layouts(w, hgx(A100_80), Params(), max_nodes=1, whole_nodes=False)
    assert res.feasible[0].gpus == 1
    whole = search_layouts(w, hgx(A100_80), Params(), max_nodes=1)
    assert whole.feasible[0].gpus == 8  # whole nodes for the planner


def test_fixed_workload_choices_are_respected() -> None:
    w = _ft(sharding="zero2", gradient_checkpointing="full", micro_batch=1)
    res = search_layouts(w, hgx(H100), Params(), max_nodes=2, whole_nodes=False)
    for e in res.feasible:
        assert e.layout.sharding == "zero2"
        assert e.layout.checkpointing == "full"
        assert e.layout.micro_batch == 1
        assert e.layout.micro_batch * e.layout.grad_accum * e.layout.dp >= 64


def test_inference_replicas_reach_the_target() -> None:
    w = make_workload(
        name="chat",
        kind="inference",
        model=ModelShape(preset="llama-2-13b"),
        context_len=4096,
        target_tokens_per_s=3000,
    )
    res = search_layouts(w, hgx(H100), Params(), max_nodes=4)
    assert res.feasible
    best = res.best
    assert best is not None and best.tokens_per_s >= 3000
    assert best.gpus == min(e.gpus for e in res.feasible)
    assert best.nodes == -(-best.gpus // 8)


def test_inference_concurrency_sets_kv_memory_and_replicas() -> None:
    # H27: with concurrency the KV cache, not the weights, decides the card.
    w = make_workload(
        name="chat",
        kind="inference",
        model=ModelShape(preset="llama-2-13b"),
        context_len=4096,
        concurrency=64,
    )
    res = search_layouts(w, hgx(A100_80), Params(), max_nodes=4)
    e = res.feasible[0]
    assert e.layout.replicas * e.layout.micro_batch >= 64
    assert e.memory.kv_cache_bytes > e.memory.weights_bytes


def test_inference_on_cards_too_small_is_rejected() -> None:
    w = make_workload(
        name="big",
        kind="inference",
        model=ModelShape(preset="llama-3.1-405b"),
        context_len=8192,
        concurrency=1,
    )
    res = search_layouts(w, pcie_box(RTX4090, fabric_gbps_per_gpu=0), Params(), max_nodes=1)
    assert not res.feasible
    assert res.rejections and "needs" in res.rejections[0]
