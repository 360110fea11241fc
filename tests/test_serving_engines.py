"""Serving as engines run it: kernels in turn, the engines' schedulers and memory reserves,
the measured decode-shaped GEMM rates, and a 70B chat service sized against a published
engine table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tests.factories.files import write_file
from tests.factories.hardware import A100_80, H20, H100, L40S, hgx, pcie_box
from tests.support.validation_serving import NIM_ROWS, dgx, nim_workload

from gpusolve.estimate import Layout, evaluate, resolve_arch, search_layouts
from gpusolve.estimate.decode_gemm import HOPPER_SXM, compute_fraction
from gpusolve.estimate.decode_published import ADA_L40S
from gpusolve.estimate.decode_rates import measured_for
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload


def _serve(**over: object) -> InferenceWorkload:
    w = make_workload(
        {
            "name": "chat",
            "kind": "inference",
            "model": ModelShape(preset="llama-3.1-70b"),
            "precision": "fp8",
            "prompt_tokens": 1000,
            "output_tokens": 1000,
            "concurrency": 1,
            **over,
        }
    )
    assert isinstance(w, InferenceWorkload)
    return w


def _kv_per_token_gpu(w: InferenceWorkload, tp: int) -> float:
    arch = resolve_arch(w.model)
    return 2 * arch.layers * math.ceil(arch.kv_heads / tp) * arch.head_dim * 1.0  # FP8 cache


@pytest.mark.parametrize(
    ("engine", "reserve", "held"),
    [("trtllm", None, 2000), ("vllm", None, 1500), ("sglang", None, 1500), ("vllm", "full", 2000)],
)
def test_the_engine_scheduler_decides_the_kv_a_request_holds(
    engine: str, reserve: str | None, held: int
) -> None:
    # GUARANTEED_NO_EVICT reserves prompt + output (1000 + 1000); paging on demand holds the
    # live context, 1000 + 1000/2 on average; `reserve` overrides the engine's default.
    w = _serve(engine=engine, reserve=reserve)
    est = evaluate(w, dgx("h100-sxm"), Layout(1, 2, 1, 1, micro_batch=10), Params())
    assert est.memory.kv_cache_bytes == pytest.approx(10 * held * _kv_per_token_gpu(w, 2))


def test_decode_gemms_are_not_hidden_behind_the_weight_and_kv_reads() -> None:
    # The case: 70B FP8 on H100 TP2, 460 sequences. The GEMMs alone need their FLOPs
    # at no more than the best measured decode-shaped share of the FP8 peak (0.70), and the
    # attention kernel reads the KV cache after them, never under them.
    w = _serve(engine="trtllm")
    est = evaluate(w, dgx("h100-sxm"), Layout(1, 2, 1, 1, micro_batch=460), Params())
    assert est.serving is not None
    step = est.serving.decode_step
    gemm_floor = 2 * resolve_arch(w.model).active_params * 460 / 2 / (1979e12 * 0.70)
    assert step["weights"] + step["compute"] >= gemm_floor
    assert step["compute"] > 0
    assert est.serving.tpot_s == pytest.approx(sum(step.values()))
    assert est.serving.tpot_s >= gemm_floor + step["kv_cache"]


def test_the_measured_gemm_table_is_interpolated_in_log_m() -> None:
    table = next(t for t in HOPPER_SXM if t.fmt == "fp8" and t.layer_params > 800e6)
    points = dict(table.points)
    assert compute_fraction(table, 256) == points[256]
    # Halfway between 256 and 1024 in log M is 512, a measured point itself.
    assert compute_fraction(table, 512) == pytest.approx(points[512])
    between = compute_fraction(table, 362)  # ~ sqrt(256 x 512)
    assert between == pytest.approx((points[256] + points[512]) / 2, rel=1e-2)
    assert compute_fraction(table, 100_000) == points[2048]


def test_decode_gemm_rates_apply_to_the_measured_class_of_card_only() -> None:
    w = _serve()
    on_h100 = evaluate(w, hgx(H100), Layout(1, 2, 1, 1, micro_batch=8), Params())
    assert not any("no decode-shaped GEMM measurement" in n for n in on_h100.notes)
    # the estimate names the measurement it used: Llama-3-70B's layer split over TP2 is
    # 855.6M / 2 = 427.8M parameters a GPU, the measured 70B TP2 set
    used = [n for n in on_h100.notes if n.startswith("decode-shaped GEMM rates: H200 SXM")]
    assert used and "fp8 set of 428M" in used[0], on_h100.notes
    # Another compute peak: no measured set. Another family without FP8 tensor cores: the
    # FP8 weights are served weight-only, at no measured set either.
    for other, said in ((H20, "no decode-shaped GEMM measurement"), (A100_80, "(W8A16")):
        est = evaluate(w, hgx(other), Layout(1, 4, 1, 1, micro_batch=8), Params())
        assert any(said in n for n in est.notes), other.id


def test_ada_decodes_at_the_published_l40s_set_in_bf16_only() -> None:
    w = _serve(precision="bf16", model=ModelShape(preset="llama-3.1-8b"))
    est = evaluate(w, pcie_box(L40S), Layout(1, 1, 1, 1, micro_batch=8), Params())
    used = [n for n in est.notes if n.startswith("decode-shaped GEMM rates: L40S")]
    # Llama-3.1-8B's layer on one GPU: q 4096 + k, v 2·1024 → 6144 × 4096, o 4096², gate_up
    # 2·14336 × 4096, down 4096 × 14336 = 218.1M parameters, the 8B TP1 set.
    assert used and "bf16 set of 218M" in used[0], est.notes
    # The published FP8 figures time vLLM's activation quantisation too: not used.
    fp8 = evaluate(_serve(), pcie_box(L40S), Layout(1, 4, 1, 1, micro_batch=8), Params())
    assert any("no decode-shaped GEMM measurement for ada fp8" in n for n in fp8.notes)


def test_ampere_decodes_at_the_published_a100_set_and_an_a10_does_not() -> None:
    # Llama-2-7B BF16 at batch 1 on an A100: a layer's GEMMs hold 4096 x 3·4096 + 4096² +
    # 3 x 4096 x 11008 = 202.4M parameters; in log distance the nearest A100 SXM set is the
    # Llama-3-70B TP4 one (213.9M: 0.055 against the 8B TP1 set's 0.075), named in the notes.
    w = _serve(precision="bf16", model=ModelShape(preset="llama-2-7b"))
    est = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1, micro_batch=1), Params())
    used = [n for n in est.notes if n.startswith("decode-shaped GEMM rates: A100 SXM")]
    assert used and "bf16 set of 214M" in used[0], est.notes
    assert measured_for("ampere", "bf16", 125.0, 218e6) is None  # an A10: another peak
    assert measured_for("ampere", "fp8", 312.0, 218e6) is None  # Ampere has no FP8 set


def test_a_b200_decodes_at_its_published_set_and_an_rtx_5090_d_does_not() -> None:
    # Only the 70B TP1 and TP2 layers' six weight copies overflow the B200's L2 twice over:
    # an 8B layer (218M) reads the nearest of those, the 70B TP2 set (427.8M).
    rate = measured_for("blackwell", "bf16", 2250.0, 218e6)
    assert rate is not None and rate.table.layer_params == pytest.approx(427.8e6)
    assert rate.source.source.startswith("B200")
    assert measured_for("blackwell_geforce", "bf16", 148.5, 218e6) is None


def test_the_set_is_chosen_by_the_layer_gemms_not_the_embeddings() -> None:
    # Llama-3.1-70B over TP4: (70.55B - 2 x 128,256 x 8,192 embedding and head) / 80 layers / 4
    # = 214M a GPU, the 70B TP4 set (213.9M), not the 8B TP1 set (218.1M) that 70.55B / 80 / 4
    # = 220M would pick.
    arch = resolve_arch(ModelShape(preset="llama-3.1-70b"))
    layer = (arch.active_params - arch.embedding_params) / arch.layers / 4
    rate = measured_for("hopper", "fp8", 989.0, layer)
    assert rate is not None and rate.table.layer_params == pytest.approx(213.9e6)
    assert measured_for("ada", "bf16", 362.0, 218e6) is not None
    assert measured_for("ada", "bf16", 119.5, 218e6) is None  # an L20: another peak
    assert all(t.fmt == "bf16" for t in ADA_L40S)


def test_four_bit_weights_do_not_stream_at_a_sixteen_bit_set() -> None:
    # A measured set's small-M shares carry 16-bit weight streams; int4 weights are a quarter of
    # the bytes, so an AWQ service keeps the dequantising stream rate and says so.
    w = _serve(precision="int4")
    est = evaluate(w, hgx(H100), Layout(1, 2, 1, 1, micro_batch=1), Params())
    assert any("measurement of 4-bit weights" in n for n in est.notes), est.notes


def test_the_engine_caps_running_requests() -> None:
    # An 8B model with short requests fits thousands of sequences on an 80 GB card; vLLM's
    # scheduler runs at most max_num_seqs = 1024 of them on a card of 70 GiB or more.
    w = _serve(model=ModelShape(preset="llama-3.1-8b"), prompt_tokens=128, output_tokens=128)
    est = evaluate(w, dgx("h100-sxm"), Layout(1, 1, 1, 1, micro_batch=1), Params())
    assert est.serving is not None
    assert (est.serving.max_batch, est.serving.batch_limit) == (1024, "engine")
    trt = evaluate(
        _serve(
            model=ModelShape(preset="llama-3.1-8b"),
            prompt_tokens=128,
            output_tokens=128,
            engine="trtllm",
        ),
        dgx("h100-sxm"),
        Layout(1, 1, 1, 1, micro_batch=1),
        Params(),
    )
    assert trt.serving is not None and trt.serving.max_batch == 2048


def test_the_engine_memory_share_sizes_the_kv_pool() -> None:
    lean = _serve(engine="vllm", kv_memory_fraction=0.6)
    full = _serve(engine="vllm", kv_memory_fraction=0.95)
    hw = dgx("h100-sxm")
    small = evaluate(lean, hw, Layout(1, 2, 1, 1), Params(headroom=0.0))
    large = evaluate(full, hw, Layout(1, 2, 1, 1), Params(headroom=0.0))
    assert small.serving is not None and large.serving is not None
    assert small.serving.max_batch < large.serving.max_batch
    # The plan's headroom still wins where it keeps more free than the engine would.
    kept = evaluate(full, hw, Layout(1, 2, 1, 1), Params(headroom=0.3))
    assert kept.headroom == pytest.approx(0.3)


def test_a_70b_chat_service_needs_what_the_published_table_implies() -> None:
    # NIM 1.8.0, Llama-3.3-70B on 2 x H100 FP8 TP2, 5000/500 tokens: 50 concurrent requests
    # stream at 59.73 ms per token. 500 concurrent users at a 60 ms target therefore take
    # 500 / 50 x 2 = 20 GPUs; the plan's search must land within 1.25x of that.
    concurrency, itl_ms = NIM_ROWS[-1]
    assert (concurrency, itl_ms) == (50, 59.73)
    w = nim_workload(500).model_copy(update={"tpot_ms": 60.0})
    result = search_layouts(w, dgx("h100-sxm"), Params(), max_nodes=16, every_size=True)
    gpus = min(e.gpus for e in result.feasible)
    published = 500 / concurrency * 2
    assert published / 1.25 <= gpus <= published * 1.25, gpus


def test_a_bad_engine_is_a_located_error(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = (
        "workloads:\n"
        "  - name: chat\n"
        "    kind: inference\n"
        "    model: {preset: llama-3-8b}\n"
        "    concurrency: 8\n"
        "    engine: tgi\n"
    )
    path = write_file(tmp_path, text)
    result = gpusolve("estimate", str(path))
    assert result.code == 2
    assert f"{path}:6:" in result.err and "engine" in result.err
    assert "Traceback" not in result.err


def test_the_estimate_names_the_release_whose_defaults_it_used() -> None:
    hw = dgx("h100-sxm")
    default = evaluate(_serve(), hw, Layout(1, 2, 1, 1), Params())
    assert any(n.startswith("engine vllm, defaults of release V1") for n in default.notes)
    assert any("no engine given" in n for n in default.notes)
    # Another release is accepted and sized with the table's defaults, never silently.
    other = evaluate(_serve(engine="vllm@0.6.3"), hw, Layout(1, 2, 1, 1), Params())
    (warning,) = [n for n in other.notes if n.startswith("warning: vllm@0.6.3 asked")]
    assert "--gpu-memory-utilization" in warning
    assert other.serving is not None and default.serving is not None
    assert other.serving.max_batch == default.serving.max_batch


def test_a_headroom_below_the_engines_reserve_is_a_warning_that_says_what_it_does() -> None:
    # vLLM's gpu_memory_utilization 0.9 keeps 10% of the card (plus the CUDA graphs it
    # captures after sizing the KV pool) outside its pools: a plan asking for 2% is told so,
    # and the batch is what vLLM will admit at its own share.
    hw = dgx("h100-sxm")
    tight = evaluate(_serve(), hw, Layout(1, 2, 1, 1), Params(headroom=0.02))
    (warning,) = [n for n in tight.notes if n.startswith("warning: the plan's headroom 2%")]
    assert "--gpu-memory-utilization 0.9" in warning and "kv_memory_fraction" in warning
    assert tight.headroom > 0.02
    # A headroom above the engine's reserve is the plan's and draws no warning.
    roomy = evaluate(_serve(), hw, Layout(1, 2, 1, 1), Params(headroom=0.3))
    assert roomy.headroom == pytest.approx(0.3)
    assert not any(n.startswith("warning: the plan's headroom") for n in roomy.notes)


@pytest.mark.parametrize("engine", ["vllm@", "tgi@1.0", "vllm@0.6 3"])
def test_a_malformed_engine_release_is_rejected(engine: str) -> None:
    with pytest.raises(ValueError, match="engine"):
        _serve(engine=engine)


def test_an_mi300x_serving_estimate_says_it_is_an_upper_bound() -> None:
    # CDNA3 has no decode-shaped measurement; its held-out serving rows read high at the
    # training rate (tests/support/validation_cdna.py), and the estimate says so.
    from tests.support.validation_cdna import mi300x_platform

    est = evaluate(_serve(), mi300x_platform(), Layout(1, 8, 1, 1, micro_batch=64), Params())
    line = next(n for n in est.notes if "no decode-shaped GEMM measurement for cdna3" in n)
    assert "upper bound" in line and "MI300X" in line
    # A family that does decode at a measured set carries no such warning.
    on_h100 = evaluate(_serve(), hgx(H100), Layout(1, 2, 1, 1, micro_batch=8), Params())
    assert not any("upper bound" in n for n in on_h100.notes)


def test_fp8_weights_on_a_card_without_fp8_tensor_cores_are_served_weight_only() -> None:
    from gpusolve.estimate.efficiency import efficiency_of
    from gpusolve.estimate.memory import weights_bytes
    from gpusolve.estimate.servingrates import Rates, serving_format

    # The A100 has no FP8 tensor cores (its fp8 peak is null) but int8 ones; the H100 both.
    assert serving_format(A100_80, "fp8") == ("bf16", True)
    assert serving_format(A100_80, "int8") == ("int8", False)
    assert serving_format(H100, "fp8") == ("fp8", False)
    assert serving_format(H100, "int4") == ("fp16", True)
    w = _serve()
    arch = resolve_arch(w.model)
    lay = Layout(1, 4, 1, 1, micro_batch=1)
    rates = Rates(w, arch, hgx(A100_80), lay)
    # 8-bit weights (one byte each) over TP4, streamed at gpt-fast's int8 weight-only share
    # of the streaming bandwidth: 1,069.20 of bf16's 1,397.31 GB/s on the same A100.
    share = 1069.20 / 1397.31
    bandwidth = 2039e9 * efficiency_of(A100_80).memory * share
    stream, _ = rates.gemm_parts(1.0)
    assert stream == pytest.approx(weights_bytes(arch, "fp8") / 4 / bandwidth, rel=1e-6)
    # The GEMMs run at the 16-bit peak and say why.
    assert rates.fmt == "bf16" and rates.peak == pytest.approx(312e12)
    est = evaluate(w, hgx(A100_80), lay, Params())
    assert any("weight-only (W8A16" in n for n in est.notes), est.notes
