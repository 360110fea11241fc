"""Multi-token prediction (DeepSeek-V3 §2.2): its FLOPs per token, derived here from the
shape, and its time, which lands on the pipeline rank that holds the output head."""

from __future__ import annotations

from typing import Any

import pytest
from tests.factories.hardware import H100, hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch
from gpusolve.estimate.compute import EIGHT_BIT
from gpusolve.estimate.efficiency import efficiency_of, mamf_fraction
from gpusolve.estimate.layerwork import device, gemm_of, gemm_time, layer_times, layer_work
from gpusolve.estimate.stageparams import mtp_params
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainshape import (
    framework,
    model_flops_per_token,
    mtp_flops_per_token,
    step_shape,
)
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload


def _workload(model: ModelShape, kind: str = "pretrain", **over: Any) -> Any:
    fields: dict[str, Any] = {"name": "w", "kind": kind, "model": model, "seq_len": 4096}
    fields["tokens"] = 1e9
    return make_workload(**{**fields, **over})


def test_the_deepseek_v3_preset_trains_one_mtp_module() -> None:
    assert resolve_arch(ModelShape(preset="deepseek-v3")).mtp_depth == 1  # §4.2: D = 1
    assert resolve_arch(ModelShape(preset="deepseek-v3", mtp_depth=0)).mtp_depth == 0
    assert resolve_arch(ModelShape(preset="llama-3-8b")).mtp_depth == 0


def test_mtp_adds_a_block_a_projection_and_a_head_pass_per_token() -> None:
    # config_671B.json: h 7168, 128 heads, MLA q_lora 1536, kv_lora 512, rope 64, nope 128,
    # v 128; 1 shared + 8 of 256 routed experts of 2048 (SwiGLU), vocab 129280.
    h, heads, vocab, s = 7168, 128, 129280, 4096
    attn = h * 1536 + 1536 * heads * 192 + h * 576 + 512 * heads * 256 + heads * 128 * h
    block = attn + 2 * h + 3 * h * 2048 + h * 256 + 8 * 3 * h * 2048  # shared, router, 8 routed
    projection = 2 * h * h  # M_1 over [RMSNorm(h); RMSNorm(Emb(t_(i+1)))]
    norms = 3 * h
    # Forward 2 FLOPs per weight, backward 4 (x 3 in all), and the block's attention core in
    # the model's (PaLM's) convention: 6·s·heads·(d_qk + d_v).
    expected = 3 * 2 * (block + projection + norms + h * vocab) + 6 * s * heads * (192 + 128)

    w = _workload(ModelShape(preset="deepseek-v3"))
    arch = resolve_arch(w.model)
    assert mtp_flops_per_token(arch, w) == pytest.approx(expected, rel=1e-9)
    off = _workload(ModelShape(preset="deepseek-v3", mtp_depth=0))
    assert mtp_flops_per_token(resolve_arch(off.model), off) == 0.0
    # The MFU numerator stays the model's own: MTP is executed work, not model FLOPs.
    assert model_flops_per_token(arch, w) == model_flops_per_token(resolve_arch(off.model), off)
    # Depth 2 is twice depth 1; a LoRA fine-tune of the main model does not run it.
    two = _workload(ModelShape(preset="deepseek-v3", mtp_depth=2))
    assert mtp_flops_per_token(resolve_arch(two.model), two) == pytest.approx(2 * expected)
    lora = _workload(ModelShape(preset="deepseek-v3"), kind="lora")
    assert mtp_flops_per_token(arch, lora) == 0.0


def _step(stages: list[int], mtp: int) -> tuple[Any, Any, Any, Any]:
    w = _workload(
        ModelShape(preset="llama-3-8b", mtp_depth=mtp), pipeline={"layers_per_stage": stages}
    )
    arch = resolve_arch(w.model)
    hw, params = hgx(H100), Params()
    lay = Layout(nodes=1, tp=1, pp=4, dp=2, micro_batch=1, grad_accum=8)
    sh = step_shape(w, arch, hw, lay, params)
    eff = efficiency_of(hw.card)
    return training_step(arch, sh, hw, eff, framework(params)), arch, sh, (hw, eff)


def test_mtp_time_lands_on_the_rank_that_holds_the_head() -> None:
    # Even split: the last rank (8 layers and the head) paces the pipeline, and MTP puts one
    # more layer, a 2h -> h projection and a second head pass and loss there.
    base, arch, sh, (hw, eff) = _step([8, 8, 8, 8], 0)
    with_mtp, _, sh1, _ = _step([8, 8, 8, 8], 1)
    assert sh1.mtp_depth == 1 and sh.mtp_depth == 0
    dev = device(hw, eff, sh, mamf_fraction(hw.card, eff, sh.gemm_format))
    elem = 1.0 if sh.gemm_format in EIGHT_BIT else sh.act_bytes
    m, h, v = sh.tokens_per_micro, arch.hidden, arch.vocab
    work = layer_work(arch, sh, moe=False, elem=elem)
    lt = layer_times(work, dev, flash=sh.flash_attention, frozen_base=False)
    head = gemm_time(gemm_of(m, h, v, elem), dev)  # bf16 here: the head's rate is the GEMMs'
    # Megatron-core's unfused vocab-parallel cross-entropy, per logit: forward cast to fp32
    # (2 + 4), max (4), subtract (8), exp (8), sum (4), divide (8); backward scale (8), cast
    # back (6): 52 bytes.
    loss = m * v * 52.0 / dev.stream_bytes_per_s
    proj = gemm_time(gemm_of(m, 2 * h, h, elem), dev)
    per_micro = lt.fwd_s + lt.bwd_s + 3 * head + loss + 3 * proj
    assert with_mtp.compute_s - base.compute_s == pytest.approx(sh.grad_accum * per_micro)
    # The 1F1B bubble is paced by the same rank: it grows by PP − 1 of that micro-batch's
    # extra work (TP1: no collective rides on it).
    assert with_mtp.tp_comm_s == 0.0
    assert with_mtp.bubble_s - base.bubble_s == pytest.approx(3 * per_micro)

    # Trim the last stage: it now holds 2 layers, the head and the MTP module, lighter than
    # the 10-layer ranks that set the pace, so MTP costs no compute time at all.
    light, _, _, _ = _step([10, 10, 10, 2], 0)
    light_mtp, _, _, _ = _step([10, 10, 10, 2], 1)
    assert light_mtp.compute_s == light.compute_s
    assert light_mtp.bubble_s == light.bubble_s


def test_mtp_depth_zero_changes_nothing() -> None:
    hw, params = hgx(H100), Params()
    lay = Layout(nodes=1, tp=1, pp=4, dp=2, micro_batch=1, grad_accum=8)
    plain = evaluate(_workload(ModelShape(preset="llama-3-8b")), hw, lay, params)
    zero = evaluate(_workload(ModelShape(preset="llama-3-8b", mtp_depth=0)), hw, lay, params)
    assert zero.step_time_s == plain.step_time_s
    assert zero.memory.total_bytes == plain.memory.total_bytes
    one = evaluate(_workload(ModelShape(preset="llama-3-8b", mtp_depth=1)), hw, lay, params)
    assert one.step_time_s > plain.step_time_s
    # The MTP block's states and activations sit on the last rank, with the head.
    assert one.stages is not None and plain.stages is not None
    for a, b in zip(one.stages[:-1], plain.stages[:-1], strict=True):
        assert a.memory.total_bytes == b.memory.total_bytes
    assert one.stages[-1].memory.total_bytes > plain.stages[-1].memory.total_bytes


def _deepseek_step(mtp: int, **pipeline: Any) -> Any:
    from tests.support.validation_cases import _hgx

    w = _workload(
        ModelShape(preset="deepseek-v3", mtp_depth=mtp),
        precision="fp8",
        micro_batch=1,
        global_batch=15360,
        pipeline=pipeline or None,
    )
    lay = Layout(256, 1, 16, 128, "zero1", micro_batch=1, grad_accum=120, ep=64)
    return evaluate(w, _hgx("h800-sxm", 400, 400), lay, Params(ep_comm_overlap=True)).step


def test_the_pace_is_the_slower_rank_in_seconds_so_mtp_never_speeds_a_step() -> None:
    # DeepSeek-V3 on PP16 with 1, 2 or 3 layers on the last rank: in layer-equivalents of
    # FLOPs a lightly loaded last rank with the MTP block and two 16-bit head passes could
    # look idle, or the MTP module could move the pace to a rank that is faster in seconds;
    # paced by seconds, MTP never shortens a step.
    for last in (1, 2, 3):
        plain = _deepseek_step(0, last_stage_layers=last)
        mtp = _deepseek_step(1, last_stage_layers=last)
        assert mtp.step_s >= plain.step_s, last
    # The even split leaves the last rank 3 layers, the head and the MTP module: it paces,
    # and under 1F1B it carries the whole of them.
    plain, mtp = _deepseek_step(0), _deepseek_step(1)
    assert mtp.compute_s > plain.compute_s * 1.3
    # DualPipe pairs that rank's stage with the first one (§3.2.1): half the extra per
    # micro-batch, so MTP costs less there than under 1F1B.
    dual_plain = _deepseek_step(0, schedule="dualpipe")
    dual_mtp = _deepseek_step(1, schedule="dualpipe")
    assert dual_mtp.compute_s - dual_plain.compute_s < mtp.compute_s - plain.compute_s


MTP_REQS = """\
workloads:
  - name: pre
    kind: pretrain
    model: {preset: llama-3-8b, mtp_depth: 1}
    tokens: 1.0e9
  - name: adapt
    kind: lora
    model: {preset: llama-3-8b, mtp_depth: 1}
    tokens: 1.0e8
"""


def test_estimate_says_where_the_mtp_module_is(tmp_path: Any) -> None:
    from tests.support.cli import run_cli

    path = tmp_path / "reqs.yaml"
    path.write_text(MTP_REQS)
    code, out = run_cli("estimate", str(path), "--card", "h100-sxm", "--gpus", "8", "--pp", "2")
    assert code == 0, out
    pre, adapt = out.split("== adapt")
    # Pre-training trains it beside the head; a LoRA run of the same model does not.
    arch = resolve_arch(ModelShape(preset="llama-3-8b", mtp_depth=1))
    size_b = sum(mtp_params(arch)) / 1e9
    assert f"1 multi-token prediction module(s) of {size_b:.3g} B" in pre
    assert "+head+MTP" in pre
    assert "multi-token" not in adapt and "+MTP" not in adapt
