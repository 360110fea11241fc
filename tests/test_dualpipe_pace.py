"""DualPipe's pace (DeepSeek-V3 §3.2.1): rank r holds stages r and PP − 1 − r and runs half
the micro-batches through each, so a rank's micro-batch is the mean of its two stages' and the
head (with any MTP modules) shares a rank with the first stage."""

from __future__ import annotations

from typing import Any

import pytest
from tests.factories.hardware import H100, hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch
from gpusolve.estimate.efficiency import efficiency_of
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainshape import framework, step_shape
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload

LAYOUT = Layout(nodes=1, tp=1, pp=4, dp=2, micro_batch=1, grad_accum=8)


def _compute_per_micro(stages: list[int], schedule: str, mtp: int = 0) -> float:
    """Compute seconds of one micro-batch on the pacing rank (the step's compute over m)."""
    w = make_workload(
        name="w",
        kind="pretrain",
        model=ModelShape(preset="llama-3-8b", mtp_depth=mtp),
        seq_len=4096,
        tokens=1e9,
        pipeline={"layers_per_stage": stages, "schedule": schedule},
    )
    arch = resolve_arch(w.model)
    hw, params = hgx(H100), Params()
    sh = step_shape(w, arch, hw, LAYOUT, params)
    step: Any = training_step(arch, sh, hw, efficiency_of(hw.card), framework(params))
    return float(step.compute_s) / LAYOUT.grad_accum


def test_a_rank_runs_the_mean_of_its_two_stages() -> None:
    # Stages (10, 6, 6, 10): the rank of stages 0 and 3 runs 10 layers (and half the head) per
    # micro-batch on average, the other 6; 1F1B's last rank runs 10 layers and the whole head.
    one_f_one_b = _compute_per_micro([10, 6, 6, 10], "1f1b")
    dual = _compute_per_micro([10, 6, 6, 10], "dualpipe")
    assert dual < one_f_one_b
    # The end pair paces: middle stages that stay under it change nothing (llama-3-8b: 32
    # layers in all).
    assert dual == pytest.approx(_compute_per_micro([10, 7, 5, 10], "dualpipe"), rel=1e-9)
    # Half the head: 1F1B's last rank (10 layers + head) and its first (10 layers) average
    # to DualPipe's end rank.
    first_paces = _compute_per_micro([10, 10, 10, 2], "1f1b")  # 10 layers without the head
    assert dual == pytest.approx((one_f_one_b + first_paces) / 2, rel=1e-9)


def test_moving_layers_between_the_first_and_last_stage_keeps_the_pace() -> None:
    # Stages 0 and 3 share a rank: only their sum matters to it.
    assert _compute_per_micro([6, 9, 9, 8], "dualpipe") == pytest.approx(
        _compute_per_micro([8, 9, 9, 6], "dualpipe"), rel=1e-9
    )
    # Under 1F1B it does not: the head's rank loses two layers.
    assert _compute_per_micro([6, 9, 9, 8], "1f1b") != pytest.approx(
        _compute_per_micro([8, 9, 9, 6], "1f1b"), rel=1e-3
    )


def test_the_mtp_module_costs_half_on_the_rank_it_shares_with_the_first_stage() -> None:
    # Stages (7, 9, 9, 7): the middle rank pair (9 + 9) paces 1F1B and DualPipe alike, until
    # MTP lands on the end ranks. Under 1F1B the last rank's 7 layers, head and MTP block
    # would be charged in full; under DualPipe half of them, beside the first stage.
    base = _compute_per_micro([7, 9, 9, 7], "dualpipe")
    with_mtp = _compute_per_micro([7, 9, 9, 7], "dualpipe", mtp=1)
    one_f_one_b = _compute_per_micro([7, 9, 9, 7], "1f1b", mtp=1)
    assert with_mtp >= base
    assert with_mtp < one_f_one_b


def test_dualpipe_hides_the_expert_all_to_alls_it_exists_to_overlap() -> None:
    # DeepSeek-V3 §3.2.1: DualPipe pairs a forward and a backward chunk so that each one's
    # all-to-alls run under the other's compute; the schedule implies the overlap.
    w = make_workload(
        name="w",
        kind="pretrain",
        model=ModelShape(preset="deepseek-v3"),
        seq_len=4096,
        tokens=1e12,
        pipeline={"schedule": "dualpipe"},
    )
    layout = Layout(nodes=32, tp=1, pp=8, dp=32, ep=32, sharding="zero1", grad_accum=16)
    arch = resolve_arch(w.model)
    hw, params = hgx(H100), Params()
    sh = step_shape(w, arch, hw, layout, params)
    eff = efficiency_of(hw.card)
    implied = training_step(arch, sh, hw, eff, framework(params, "dualpipe"))
    exposed = training_step(arch, sh, hw, eff, framework(params))
    assert framework(params, "dualpipe").ep_comm_overlap
    assert implied.ep_comm_s < exposed.ep_comm_s
    est = evaluate(w, hw, layout, params)
    assert any("DualPipe overlaps" in n for n in est.notes)
