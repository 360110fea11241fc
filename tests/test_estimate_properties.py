"""Property tests (hypothesis): monotonicity of memory and time, and breakdown totals."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.factories.hardware import A100_80, H100, L40S, hgx

from gpusolve.estimate import Hardware, Layout, evaluate, search_layouts
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, Workload, make_workload

FEW = settings(max_examples=30, deadline=None)

MODELS = st.sampled_from(
    [
        ModelShape(preset="llama-2-7b"),
        ModelShape(preset="llama-2-70b"),
        ModelShape(preset="qwen2.5-14b"),
        ModelShape(preset="mixtral-8x7b"),
        ModelShape(preset="gpt-3-175b"),
        ModelShape(params_b=3),
        ModelShape(params_b=33),
    ]
)
KINDS = st.sampled_from(["pretrain", "full_finetune", "lora", "qlora"])
OPTIMIZERS = st.sampled_from(["adamw", "adamw_fp32", "adam_8bit", "sgd_momentum", "adafactor"])
PRECISIONS = st.sampled_from(["bf16", "fp16", "fp8", "fp32"])


@st.composite
def training_case(draw: st.DrawFn) -> tuple[Workload, Layout]:
    w = make_workload(
        name="w",
        kind=draw(KINDS),
        model=draw(MODELS),
        precision=draw(PRECISIONS),
        optimizer=draw(OPTIMIZERS),
        seq_len=draw(st.sampled_from([512, 2048, 8192])),
        flash_attention=draw(st.booleans()),
        tokens=1e9,
    )
    lay = Layout(
        nodes=4,
        tp=draw(st.sampled_from([1, 2, 4])),
        pp=draw(st.sampled_from([1, 2, 4])),
        dp=draw(st.sampled_from([1, 2, 4, 8])),
        sharding=draw(st.sampled_from(["ddp", "zero1", "zero2", "zero3", "fsdp_hybrid"])),
        checkpointing=draw(st.sampled_from(["none", "selective", "full"])),
        micro_batch=draw(st.sampled_from([1, 2, 8])),
        grad_accum=draw(st.sampled_from([1, 4, 16])),
        sequence_parallel=draw(st.booleans()),
    )
    return w, lay


def _total(w: Workload, lay: Layout) -> float:
    """Memory the layout's choices move: the runtime overhead (CUDA context, NCCL buffers
    once a layout has more than one GPU) depends on the GPU count alone."""
    m = evaluate(w, hgx(H100), lay, Params()).memory
    return m.total_bytes - m.overhead_bytes


def _with(lay: Layout, **changes: object) -> Layout:
    from dataclasses import replace

    return replace(lay, **changes)  # type: ignore[arg-type]


@FEW
@given(training_case())
def test_more_zero_stage_never_increases_memory(case: tuple[Workload, Layout]) -> None:
    w, lay = case
    totals = [_total(w, _with(lay, sharding=s)) for s in ("ddp", "zero1", "zero2", "zero3")]
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(totals))
    assert _total(w, _with(lay, sharding="fsdp_full")) == totals[-1]


@FEW
@given(training_case())
def test_more_tensor_parallel_never_increases_memory(case: tuple[Workload, Layout]) -> None:
    w, lay = case
    totals = [_total(w, _with(lay, tp=t)) for t in (1, 2, 4, 8)]
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(totals))


@FEW
@given(training_case())
def test_checkpointing_never_increases_memory(case: tuple[Workload, Layout]) -> None:
    w, lay = case
    totals = [_total(w, _with(lay, checkpointing=c)) for c in ("none", "selective", "full")]
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(totals))


@FEW
@given(training_case())
def test_totals_equal_the_sum_of_the_breakdown(case: tuple[Workload, Layout]) -> None:
    w, lay = case
    m = evaluate(w, hgx(A100_80), lay, Params()).memory
    parts = (
        m.weights_bytes
        + m.gradients_bytes
        + m.optimizer_bytes
        + m.activations_bytes
        + m.kv_cache_bytes
        + m.overhead_bytes
    )
    parts += m.gathered_weights_bytes
    assert math.isclose(m.total_bytes, parts, rel_tol=1e-12)
    gb = m.as_gb()
    assert math.isclose(gb["total"], sum(v for k, v in gb.items() if k != "total"), rel_tol=1e-9)


@FEW
@given(
    st.sampled_from([ModelShape(preset="llama-2-13b"), ModelShape(params_b=70)]),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(min_value=1, max_value=64),
    st.sampled_from([512, 4096, 32768]),
)
def test_inference_memory_sums_and_tp_never_increases_it(
    model: ModelShape, tp: int, batch: int, context: int
) -> None:
    w = make_workload(
        name="i", kind="inference", model=model, context_len=context, concurrency=batch
    )
    totals = []
    for t in (tp, tp * 2):
        m = evaluate(w, hgx(H100), Layout(1, t, 1, 1, micro_batch=batch), Params()).memory
        parts = (
            m.weights_bytes
            + m.gradients_bytes
            + m.optimizer_bytes
            + m.activations_bytes
            + m.kv_cache_bytes
            + m.overhead_bytes
        )
        parts += m.gathered_weights_bytes
        assert math.isclose(m.total_bytes, parts, rel_tol=1e-12)
        totals.append(m.total_bytes - m.overhead_bytes)
    assert totals[0] >= totals[1]


@FEW
@given(training_case(), st.sampled_from([1, 2, 4]))
def test_more_data_parallel_gpus_never_increase_time_on_ample_links(
    case: tuple[Workload, Layout], factor: int
) -> None:
    # With a fixed global batch, doubling DP halves the micro-steps per GPU. On links fast
    # enough that communication is negligible, more GPUs never take longer (the 5%-per-
    # doubling node penalty and a larger pipeline bubble share never outweigh 2× compute).
    # On slow links they can (H34: an 8-card node short of NVLink can be slower than 4).
    w, lay = case
    hw = Hardware(H100, 8, 1e9, 1e9, 1e6)  # ~unbounded links and storage
    gb = lay.dp * lay.micro_batch * lay.grad_accum * 2 * factor
    w = w.model_copy(update={"global_batch": gb})
    lay = _with(lay, grad_accum=gb // (lay.dp * lay.micro_batch))

    def hours(dp: int) -> float:
        gpus = lay.tp * lay.pp * dp
        nodes = max(1, math.ceil(gpus / 8))
        accum = gb // (dp * lay.micro_batch)
        est = evaluate(w, hw, _with(lay, dp=dp, nodes=nodes, grad_accum=accum), Params())
        assert est.time_to_train_s is not None
        return est.time_to_train_s

    assert hours(lay.dp * 2) <= hours(lay.dp) * (1 + 1e-9)


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([ModelShape(preset="llama-2-13b"), ModelShape(params_b=30)]))
def test_allowing_more_nodes_never_increases_the_best_time(model: ModelShape) -> None:
    w = make_workload(
        name="w",
        kind="full_finetune",
        model=model,
        tokens=5e10,
        global_batch=256,
        deadline_hours=1,  # unreachable: the search explores every size it may
    )
    best = []
    for max_nodes in (1, 2, 4, 8):
        res = search_layouts(w, hgx(A100_80), Params(), max_nodes=max_nodes)
        times = [e.time_to_train_s for e in res.feasible if e.time_to_train_s is not None]
        best.append(min(times) if times else math.inf)
    assert all(a >= b for a, b in itertools.pairwise(best))


def test_search_never_returns_an_infeasible_layout() -> None:
    w = make_workload(
        name="w", kind="full_finetune", model=ModelShape(preset="llama-2-13b"), tokens=1e9
    )
    for hw in (hgx(A100_80), hgx(L40S)):
        for e in search_layouts(w, hw, Params(), max_nodes=4).feasible:
            assert e.feasible and e.fits and not e.reasons
