"""The output layer and the loss in a training step: the layer runs at the 16-bit rate under an
FP8 recipe (Megatron-core keeps it outside Transformer Engine's FP8 modules; DeepSeek-V3
§3.3.1 keeps "the output head" in BF16), and the vocabulary-parallel cross-entropy moves 52
bytes per logit (Megatron-core's unfused default: 38 forward, 14 backward)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.factories.hardware import H100, hgx

from gpusolve.estimate import Layout, resolve_arch
from gpusolve.estimate.efficiency import efficiency_of, mamf_fraction
from gpusolve.estimate.layerwork import device
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainshape import framework, step_shape
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload

LAYOUT = Layout(nodes=1, tp=1, pp=1, dp=8, micro_batch=1, grad_accum=4)


def _shape(vocab: int, precision: str) -> tuple[Any, Any, Any, Any]:
    model = ModelShape(layers=8, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=vocab)
    w = make_workload(
        name="w", kind="pretrain", model=model, precision=precision, seq_len=4096, tokens=1e9
    )
    arch = resolve_arch(w.model)
    hw = hgx(H100)
    sh = step_shape(w, arch, hw, LAYOUT, Params())
    return arch, sh, hw, efficiency_of(hw.card)


def _compute_per_micro(vocab: int, precision: str) -> float:
    arch, sh, hw, eff = _shape(vocab, precision)
    step = training_step(arch, sh, hw, eff, framework(Params()))
    return float(step.compute_s) / LAYOUT.grad_accum


def test_under_fp8_the_output_layer_runs_at_the_16_bit_rate() -> None:
    _, fp8, hw, eff = _shape(128256, "fp8")
    _, bf16, _, _ = _shape(128256, "bf16")
    fp8_dev = device(
        hw, eff, fp8, mamf_fraction(hw.card, eff, "fp8"), mamf_fraction(hw.card, eff, "bf16")
    )
    bf16_dev = device(hw, eff, bf16, mamf_fraction(hw.card, eff, "bf16"))
    assert fp8_dev.gemm_flops > 1.5 * bf16_dev.gemm_flops  # the layers' GEMMs in FP8
    assert fp8_dev.head_gemm_flops == pytest.approx(bf16_dev.gemm_flops)
    assert bf16_dev.head_gemm_flops == bf16_dev.gemm_flops


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_a_larger_vocabulary_costs_its_head_gemms_and_52_bytes_per_logit(precision: str) -> None:
    small, large = 32000, 256000
    _, sh, hw, eff = _shape(large, precision)
    bf16 = _shape(large, "bf16")[1]
    rate = device(hw, eff, bf16, mamf_fraction(hw.card, eff, "bf16")).gemm_flops
    bandwidth = device(hw, eff, bf16, mamf_fraction(hw.card, eff, "bf16")).stream_bytes_per_s
    tokens, hidden = sh.tokens_per_micro, 4096
    extra = large - small
    # Forward, data gradient and weight gradient of [tokens x hidden] x [hidden x vocab], all
    # compute-bound at this size, at the 16-bit rate whatever the layers' format; then the
    # loss's bytes over the extra logits.
    gemms = 3 * 2.0 * tokens * hidden * extra / rate
    loss = tokens * extra * 52.0 / bandwidth
    delta = _compute_per_micro(large, precision) - _compute_per_micro(small, precision)
    assert delta == pytest.approx(gemms + loss, rel=1e-6)
