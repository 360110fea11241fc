"""A measured run calibrates the physics and transfers to every card (issue 25, H12)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.factories.hardware import A100_80, H20, H100, hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch, search_layouts
from gpusolve.estimate.calibration import calibration_for, measured_layout
from gpusolve.estimate.trainshape import training_activations_for, training_states_for
from gpusolve.estimate.units import GB
from gpusolve.models.params import Params
from gpusolve.models.requirements import Measured, ModelShape, make_workload

BASE = {
    "name": "pt",
    "kind": "pretrain",
    "model": ModelShape(preset="llama-2-7b"),
    "tokens": 2e11,
    "seq_len": 4096,
    "global_batch": 1024,
    "deadline_hours": 24 * 7,
}


def measured_on(card_id: str, **fields: object) -> Measured:
    m = Measured(card=card_id, **fields)  # type: ignore[arg-type]
    m.bind_card({"h100-sxm": H100, "a100-80gb-sxm": A100_80, "h20-96gb": H20}[card_id])
    return m


def test_the_measured_run_is_reproduced_on_its_own_card_and_layout() -> None:
    m = measured_on("h100-sxm", gpus=8, tokens_per_s=8 * 2500.0)
    w = make_workload(**BASE, measured=m)
    lay = measured_layout(w)
    # the workload's global batch of 1,024 sequences: 128 micro-batches of 1 on 8 GPUs
    assert (lay.tp, lay.pp, lay.dp, lay.micro_batch, lay.grad_accum) == (1, 1, 8, 1, 128)
    est = evaluate(w, hgx(H100), lay, Params())
    cal = calibration_for(w, resolve_arch(w.model), Params(), H100)
    assert cal is not None and cal.measured_mfu is not None
    # Communication stays modelled, so the step can only be slower than the measured rate.
    assert est.tokens_per_s == pytest.approx(8 * 2500.0, rel=0.05)
    assert est.tokens_per_s <= 8 * 2500.0 * 1.0001
    assert est.measured and any("measured on this card" in n for n in est.calibration)


@pytest.mark.parametrize("target", [H100, H20], ids=["same card", "same family"])
def test_mfu_025_plans_proportionally_more_gpus(target: object) -> None:
    default = search_layouts(make_workload(**BASE), hgx(target), Params(), max_nodes=64).best  # type: ignore[arg-type]
    w = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.25))
    cal = calibration_for(w, resolve_arch(w.model), Params(), H100)
    assert cal is not None and cal.compute_factor < 0.75
    slow = search_layouts(w, hgx(target), Params(), max_nodes=64).best  # type: ignore[arg-type]
    assert default is not None and slow is not None
    assert default.meets_deadline and slow.meets_deadline
    # GPU counts come in whole nodes of 8: proportional within one rounding step either way.
    expected = default.gpus / cal.compute_factor
    assert expected * 0.75 <= slow.gpus <= expected * 1.5
    assert slow.gpus > default.gpus
    how = " ".join(slow.calibration)
    assert ("measured on this card" if target is H100 else "same family") in how


def test_another_family_moves_by_the_ratio_of_parameters() -> None:
    w = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.25))
    lay = Layout(1, 1, 1, 8, "zero1", micro_batch=1, grad_accum=16)
    plain = evaluate(make_workload(**BASE), hgx(A100_80), lay, Params())
    moved = evaluate(w, hgx(A100_80), lay, Params())
    cal = calibration_for(w, resolve_arch(w.model), Params(), H100)
    assert cal is not None
    assert plain.step is not None and moved.step is not None
    # The compute phase is divided by the same k the measured family got.
    assert moved.step.compute_s == pytest.approx(plain.step.compute_s / cal.compute_factor)
    assert moved.step.dp_comm_s == pytest.approx(plain.step.dp_comm_s)
    assert any("ratio of their achievable fractions" in n for n in moved.calibration)


def test_a_higher_measured_mfu_plans_fewer_gpus_than_a_lower_one() -> None:
    fast = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.55))
    slow = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.25))
    a = search_layouts(fast, hgx(H100), Params(), max_nodes=64).best
    b = search_layouts(slow, hgx(H100), Params(), max_nodes=64).best
    assert a is not None and b is not None and a.gpus < b.gpus


def test_h12_warns_below_30_and_above_60_percent() -> None:
    arch = resolve_arch(BASE["model"])  # type: ignore[arg-type]
    for mfu, word in ((0.25, "below H12's 30%"), (0.7, "above H12's healthy 60%")):
        w = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=mfu))
        cal = calibration_for(w, arch, Params(), H100)
        assert cal is not None and any(word in n for n in cal.notes), cal.notes
    ok = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.45))
    cal = calibration_for(ok, arch, Params(), H100)
    assert cal is not None and not any("H12's" in n for n in cal.notes)


def test_measured_peak_calibrates_the_activation_estimate() -> None:
    arch = resolve_arch(BASE["model"])  # type: ignore[arg-type]
    probe = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.45))
    lay = measured_layout(probe)
    states = training_states_for(probe, arch, 8, lay, Params()).total_bytes
    acts = training_activations_for(probe, arch, 8, lay)
    peak_gb = (states + 1.5 * acts) / GB
    m = measured_on("h100-sxm", gpus=8, mfu=0.45, peak_memory_gb=peak_gb)
    w = make_workload(**BASE, measured=m)
    cal = calibration_for(w, arch, Params(), H100)
    assert cal is not None and cal.activation_factor == pytest.approx(1.5)
    other = Layout(1, 2, 1, 4, "zero1", micro_batch=2, grad_accum=32)
    plain = evaluate(make_workload(**BASE), hgx(A100_80), other, Params())
    calibrated = evaluate(w, hgx(A100_80), other, Params())
    assert calibrated.memory.activations_bytes == pytest.approx(
        1.5 * plain.memory.activations_bytes
    )


def test_a_peak_below_the_states_is_refused_with_a_reason() -> None:
    w = make_workload(**BASE, measured=measured_on("h100-sxm", gpus=8, mfu=0.45, peak_memory_gb=10))
    cal = calibration_for(w, resolve_arch(w.model), Params(), H100)
    assert cal is not None and cal.activation_factor == 1.0
    assert any("below the" in n and "model states" in n for n in cal.notes)


def test_the_loader_binds_the_measured_card_and_the_plan_says_how(tmp_path: Path) -> None:
    from gpusolve.load import load_requirements_doc
    from gpusolve.plan.inputs import prepare_run

    reqs = tmp_path / "r.yaml"
    reqs.write_text(
        "workloads:\n"
        "  - name: ft\n"
        "    kind: full_finetune\n"
        "    model: {preset: llama-2-7b}\n"
        "    tokens: 1.0e+9\n"
        "    measured: {card: a100-80gb-sxm, gpus: 8, mfu: 0.3}\n"
    )
    run = prepare_run(reqs, (), ())
    m = run.reqs.workloads[0].measured
    assert m is not None and m.bound_card is not None and m.bound_card.id == "a100-80gb-sxm"
    assert load_requirements_doc(reqs)[0].workloads[0].measured is not None


def test_a_plan_on_another_card_says_how_the_measurement_moved(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    reqs = tmp_path / "r.yaml"
    reqs.write_text(
        "workloads:\n"
        "  - name: ft\n"
        "    kind: full_finetune\n"
        "    model: {preset: llama-2-7b}\n"
        "    tokens: 2.0e+9\n"
        "    deadline_hours: 48\n"
        "    measured: {card: a100-80gb-sxm, gpus: 8, mfu: 0.3}\n"
    )
    out = gpusolve("plan", str(reqs), "--format", "json")
    assert out.code == 0, out.err
    (dep,) = json.loads(out.out)["deployments"]
    how = " ".join(dep["calibration"])
    assert "measured MFU 30.0% on a100-80gb-sxm" in how
    if dep["card"] != "a100-80gb-sxm":
        assert "same family" in how or "ratio of their achievable fractions" in how
    text = gpusolve("plan", str(reqs))
    assert "calib    calibrated compute:" in text.out


def test_the_measured_runs_log_is_read_and_reported(tmp_path: Path) -> None:
    from gpusolve.plan.inputs import prepare_run

    log = Path(__file__).parent / "data" / "dmon" / "l40s_query_stalled.csv"
    (tmp_path / "run.csv").write_text(log.read_text())
    reqs = tmp_path / "r.yaml"
    body = (
        "workloads:\n"
        "  - name: ft\n"
        "    kind: full_finetune\n"
        "    model: {preset: llama-2-7b}\n"
        "    tokens: 1.0e+9\n"
        "    measured: {card: l40s, gpus: 2, mfu: 0.2, profile: PROFILE}\n"
    )
    reqs.write_text(body.replace("PROFILE", "run.csv"))
    w = prepare_run(reqs, (), ()).reqs.workloads[0]
    cal = calibration_for(w, resolve_arch(w.model), Params(), H100)
    assert cal is not None
    assert any("log run.csv: stalled" in n for n in cal.notes)
    assert any("includes input or communication stalls" in n for n in cal.notes)
    reqs.write_text(body.replace("PROFILE", "missing.csv"))
    from gpusolve.errors import InputError

    with pytest.raises(InputError) as err:
        prepare_run(reqs, (), ())
    assert err.value.problems[0].line == 6 and "does not exist" in err.value.problems[0].message
