"""The training code's stack (estimate/stacks.py) and H12's ceiling as a check on the result.

Expected figures are derived by hand from the stacks' code as stacks.py cites it.
"""

from __future__ import annotations

import json

import pytest
from tests.support.example_plans import plan_json
from tests.support.shipped import EXAMPLES
from tests.support.validation_cases import _hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch
from gpusolve.estimate.stacks import default_stack, eager_stream_bytes_per_token, stack_named
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload

QWEN14 = ModelShape(preset="qwen2.5-14b")


def _ft(kind: str, framework: str | None) -> dict[str, object]:
    return dict(name="x", kind=kind, model=QWEN14, seq_len=4096, tokens=1e9, framework=framework)


def test_fine_tunes_default_to_hugging_face_and_pretraining_to_megatron() -> None:
    assert default_stack("pretrain") == "megatron"
    for kind in ("full_finetune", "lora", "qlora"):
        assert default_stack(kind) == "hf"


def test_eager_bytes_of_a_llama_layer_by_hand() -> None:
    # Llama-2-7B (h 4096, 32 heads of 128, f 11008): two eager RMSNorms 2 x 32 B x h, rotary
    # 24 B per element of q and k, SiLU and product 4 B x f beyond the fused 6, and PEFT's
    # scaling and sum 10 B per output element of every Linear of an all-Linear LoRA.
    arch = resolve_arch(ModelShape(preset="llama-2-7b"))
    h, f = 4096, 11008
    outputs = 3 * h + h + 2 * f + h
    expected = 64 * h + 24 * 2 * h + 4 * f + 10 * outputs
    got = eager_stream_bytes_per_token(
        arch, stack_named("hf"), tp=1, adapted_share=1.0, act_bytes=2
    )
    assert got == pytest.approx(expected)
    fused = eager_stream_bytes_per_token(
        arch, stack_named("megatron"), tp=1, adapted_share=1.0, act_bytes=2
    )
    assert fused == 0.0


def test_an_eager_stack_keeps_more_and_runs_slower_than_the_fused_one() -> None:
    hw = _hgx("a800-80gb-sxm", 400, 200)
    layout = Layout(1, 1, 1, 8, "zero3", checkpointing="none", micro_batch=1, grad_accum=4)
    fused = evaluate(make_workload(**_ft("full_finetune", "megatron")), hw, layout, Params())
    eager = evaluate(make_workload(**_ft("full_finetune", "hf")), hw, layout, Params())
    assert eager.memory.activations_bytes > fused.memory.activations_bytes
    assert eager.step_time_s is not None and fused.step_time_s is not None
    assert eager.step_time_s > fused.step_time_s
    # The loss keeps three fp32 copies of the logits (12 B) where the fused loss keeps 4.
    arch = resolve_arch(QWEN14)
    extra_logits = 4096 * arch.vocab * (12 - 4)
    assert eager.memory.activations_bytes - fused.memory.activations_bytes > extra_logits


def test_an_mfu_above_the_ceiling_says_so_without_a_measured_run() -> None:
    hw = _hgx("a800-80gb-sxm", 400, 200)
    layout = Layout(1, 1, 1, 8, "zero3", checkpointing="none", micro_batch=1, grad_accum=4)
    est = evaluate(make_workload(**_ft("lora", "megatron")), hw, layout, Params())
    assert est.mfu > 0.60
    assert any("above H12's healthy 60%" in n for n in est.notes)
    low = evaluate(make_workload(**_ft("lora", "hf")), hw, layout, Params())
    assert low.mfu <= 0.60
    assert not any("above H12's healthy" in n for n in low.notes)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_example_plans_above_the_ceiling_without_a_measured_run(path) -> None:
    code, out = plan_json(path)
    assert code == 0, out
    for d in json.loads(out)["deployments"]:
        if d.get("mfu") is not None and not d.get("calibration"):
            assert d["mfu"] <= Params().mfu_ceiling, (d["workload"], d["mfu"])
