"""The documents' rules of thumb (H05, H30, H38), computed as stated and labelled."""

from __future__ import annotations

import pytest

from gpusolve.estimate import thumb_figures, whole_model_memory
from gpusolve.estimate.rules_of_thumb import h05_range_bytes, h30_bytes
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload

GB = 1e9


def test_h38_worked_examples() -> None:
    # H38 (document B): "7B full fine-tune 7 × 20 ≈ 140 GB → at least two 80 GB cards;
    # LoRA 7 × 6 ≈ 42 GB → one 80 GB card". Factors are the Params defaults (H30).
    p = Params()
    assert h30_bytes(7, p.thumb_factor_full_finetune) / GB == 140
    assert h30_bytes(7, p.thumb_factor_lora) / GB == 42
    assert thumb_figures(7, "full_finetune", p).h30_bytes / GB == 140
    assert thumb_figures(7, "lora", p).h30_bytes / GB == 42
    assert thumb_figures(7, "qlora", p).h30_class == "LoRA"
    # H27/H30: inference 13 × 2 = 26 GB.
    assert thumb_figures(13, "inference", p).h30_bytes / GB == 26


def test_h05_sixteen_to_twenty_four_bytes_per_parameter() -> None:
    # H05 (document A): mixed-precision Adam needs ≈ 16–24 bytes per parameter; "a 7B model
    # needs ≥ 112 GB".
    low, high = h05_range_bytes(7)
    assert (low / GB, high / GB) == (112, 168)
    t = thumb_figures(7, "pretrain", Params())
    assert t.h05_low_bytes == low
    assert thumb_figures(7, "lora", Params()).h05_low_bytes is None  # full training only


def test_rules_can_change_the_factor() -> None:
    t = thumb_figures(7, "full_finetune", Params(thumb_factor_full_finetune=12))
    assert t.h30_bytes / GB == 84
    assert t.h30_range == (12, 20)
    assert "rule of thumb H30" in t.describe(7)[0]


def test_formula_figure_next_to_the_rule_of_thumb() -> None:
    # With 16-bit gradients the formula's model states for 7B full fine-tuning equal H05's
    # low end (112 GB); the default fp32 gradient buffer adds 2 B/param (126 GB); activations
    # and runtime overhead come on top, so the whole job exceeds both.
    w = make_workload(name="ft", kind="full_finetune", model=ModelShape(params_b=7), tokens=1e9)
    m16 = whole_model_memory(w, Params(bytes_per_param_convention=16))
    assert (m16.weights_bytes + m16.gradients_bytes + m16.optimizer_bytes) / GB == pytest.approx(
        112
    )
    m = whole_model_memory(w, Params())
    assert (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / GB == pytest.approx(126)
    assert m.total_bytes / GB > 112
    lora = make_workload(name="l", kind="lora", model=ModelShape(params_b=7), tokens=1e9)
    ml = whole_model_memory(lora, Params())
    assert 14 < ml.total_bytes / GB < 42  # below the rule of thumb's 42 GB at micro-batch 1
