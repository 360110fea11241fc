"""Goodput: failures, restarts and planned overhead on top of the steady-state run."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpusolve.estimate.goodput import FAILURES_PER_GPU_HOUR, GoodputInputs, goodput

ROOT = Path(__file__).resolve().parents[1]


def test_default_rate_is_llama3s_interruptions() -> None:
    # Llama 3 report Table 5: 419 unexpected interruptions, 54 days, 16,384 GPUs.
    assert pytest.approx(419 / (54 * 24 * 16384)) == FAILURES_PER_GPU_HOUR


def test_the_run_grows_by_the_expected_losses() -> None:
    # 1,000 GPUs at 1e-4 failures per GPU-hour: λ = 0.1 per hour. Saves take 60 s every 100
    # steps of 36 s (an hour), the restart 30 min + the 60 s reload: each failure costs half
    # an hour of work and 31 min, so the loss rate is 0.1·(0.5 + 31/60) and
    # T = 100 h / (1 − that). The user's interval is used as given; the steady state already
    # counts its 100 saves.
    g = goodput(
        steady_s=100 * 3600,
        stall_s=100 * 60.0,
        gpus=1000,
        step_s=36.0,
        interval_steps=100,
        save_s=60.0,
        inputs=GoodputInputs(1e-4, 1800.0, 3600.0, None),
    )
    loss = 0.1 * (0.5 + 31 / 60)
    assert g.total_s == pytest.approx(100 * 3600 / (1 - loss))
    assert g.failures == pytest.approx(0.1 * g.total_s / 3600)
    assert g.lost_work_s == pytest.approx(g.failures * 1800)
    assert g.restart_s == pytest.approx(g.failures * 31 * 60)
    # The parts add up; Young's interval √(2·60 s / λ) is reported beside the one used.
    assert g.total_s == pytest.approx(
        g.steady_s + g.overhead_s + g.extra_saves_s + g.lost_work_s + g.restart_s
    )
    assert g.optimal_interval_s == pytest.approx(math.sqrt(2 * 60 / (0.1 / 3600)))


def test_frequent_failures_shorten_the_interval_and_pay_for_the_saves() -> None:
    # The rules' interval (1,000 steps of 10 s) is longer than Young's, so Young's is used and
    # the saves beyond those the steady state counts are their own part.
    g = goodput(
        steady_s=3.6e6, stall_s=0.0, gpus=16384, step_s=10.0, interval_steps=1000, save_s=5.0
    )
    assert g.interval_s == pytest.approx(g.optimal_interval_s) and g.interval_s < 10_000
    assert g.extra_saves_s == pytest.approx(3.6e6 / g.interval_s * 5.0)
    # Llama 3 405B's run kept "more than 90% effective training time" (§3.3.4).
    assert 0.90 < g.fraction < 1.0


def test_a_job_that_fails_faster_than_it_progresses_never_finishes() -> None:
    g = goodput(
        steady_s=3600.0,
        stall_s=0.0,
        gpus=100_000,
        step_s=10.0,
        interval_steps=1000,
        save_s=5.0,
        inputs=GoodputInputs(1e-3, 3600.0, 3600.0, 0.0),
    )
    assert not g.finishes and g.fraction == 0.0


def _pretrain_without_margin(tmp_path: Path) -> Path:
    """The 70B pretraining example with `margin: 0`: with the default training margin
    (0.15) the run must finish by 1440 / 1.15 = 1252 h, which the cloud's largest layout
    (8 x 8 H800, at most 8 instances, 1287 h) misses, so the plan buys servers and rents
    nothing; at margin 0 it rents, the case this test checks (a rental budgets the run's
    total hours)."""
    data = yaml.safe_load((ROOT / "examples" / "pretrain-70b-infiniband.yaml").read_text())
    data["margin"] = 0
    path = tmp_path / "pretrain-70b-no-margin.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_every_training_deployment_in_a_plan_carries_its_goodput(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    res = gpusolve("plan", str(_pretrain_without_margin(tmp_path)), "--format", "json")
    assert res.code == 0, res.err
    deployments = json.loads(res.out)["deployments"]
    training = [d for d in deployments if d["time_to_train_h"] is not None]
    assert training and all(d["mode"] == "cloud" for d in training)
    for d in training:
        g = d["goodput"]
        parts = g["steady_h"] + g["overhead_h"] + g["extra_saves_h"]
        parts += g["lost_work_h"] + g["restart_h"]
        assert g["total_h"] == pytest.approx(parts)
        assert g["total_h"] > g["steady_h"] > 0
        # The plan budgets the total: its hours per run and the hours it rents or runs.
        assert d["time_to_train_h"] == pytest.approx(g["total_h"], abs=0.01)
        assert d["rental_hours"] == pytest.approx(g["total_h"], abs=0.1)  # runs: 1
        assert g["gpu_hours"] == pytest.approx(g["total_h"] * d["gpus"])


def test_a_users_goodput_block_replaces_the_defaults_and_bad_values_are_located(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    base = """\
workloads:
  - name: ft
    kind: full_finetune
    model: {preset: llama-2-7b}
    tokens: 1.0e9
    goodput: {failures_per_gpu_hour: 0.001, restart_minutes: 20, overhead_share: 0.1}
"""
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(base)
    res = gpusolve("estimate", str(reqs), "--card", "h100-sxm", "--gpus", "8", "--format", "json")
    assert res.code == 0, res.err
    g = json.loads(res.out)["workloads"][0]["configs"][0]["goodput"]
    assert g["failures_per_gpu_hour"] == 0.001 and g["source"] == "given in goodput:"
    assert g["overhead_h"] == pytest.approx(0.1 * g["steady_h"])
    assert g["restart_each_min"] >= 20
    reqs.write_text(base.replace("overhead_share: 0.1", "overhead_share: 1.5"))
    res = gpusolve("estimate", str(reqs))
    assert res.code == 2 and "reqs.yaml:6:" in res.err and "overhead_share" in res.err


ROW = re.compile(
    r"^ {8,}(?P<label>\S.*?)\s+(?P<h>[\d,]+\.\d\d) h\s+(?P<cost>[\d,]+) (?P<cur>[A-Z]{3})$"
)


def _figure(text: str) -> float:
    return float(text.replace(",", ""))


def _printed_runs(text: str) -> list[list[tuple[str, float, float]]]:
    """Each training deployment's rows in the text plan: (label, hours, money), in order,
    the last one the total."""
    runs: list[list[tuple[str, float, float]]] = []
    rows: list[tuple[str, float, float]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("      run      one run's time and cost"):
            inside, rows = True, []
            continue
        found = ROW.match(line) if inside else None
        if found is None:
            continue
        rows.append((found["label"], _figure(found["h"]), _figure(found["cost"])))
        if found["label"] == "total per run":
            runs.append(rows)
            inside = False
    return runs


def test_every_training_example_prints_its_runs_time_and_cost_by_part() -> None:
    """Issue 36: goodput appears in every training deployment's time and cost, with its
    parts. In the text plan of each example that trains: steady state, then each part, in
    hours and money, adding up to the total printed, which is the deployment's time per run
    and the share of its rental (or busy energy) one run takes, worked out here from the
    JSON's own figures."""
    from tests.support.example_plans import solved
    from tests.support.shipped import EXAMPLES

    from gpusolve.render import render_plan

    trained = 0
    for example in EXAMPLES:
        plan = solved(example).plan
        training = [d for d in plan.deployments if d.time_to_train_h is not None]
        if not training:
            continue
        trained += 1
        text = render_plan(plan, "text")
        markdown = render_plan(plan, "markdown")
        runs = _printed_runs(text)
        assert len(runs) == len(training), (example.name, text)
        assert plan.cost is not None
        for d, rows in zip(training, runs, strict=True):
            g, cost = d.goodput, d.run_cost
            assert g is not None and cost is not None and cost > 0, example.name
            *parts, (_, total_h, total_cost) = rows
            labels = [label for label, _, _ in parts]
            assert labels[0].startswith("steady state"), labels
            assert {"evaluation and ramp-up", "extra checkpoint saves"} <= set(labels)
            assert any(label.startswith("work redone after failures") for label in labels)
            assert "restarts and checkpoint reloads" in labels
            # The parts add up to the printed total, to the last printed digit.
            assert round(sum(h for _, h, _ in parts), 2) == total_h, (example.name, rows)
            assert sum(c for _, _, c in parts) == total_cost, (example.name, rows)
            assert total_h == pytest.approx(g.total_h, abs=0.006)
            assert total_h == pytest.approx(d.time_to_train_h, abs=0.006)
            assert total_cost == pytest.approx(cost, abs=0.5 + 1e-6)
            assert parts[0][1] == pytest.approx(g.steady_h, abs=0.01)
            # One run's share of the line its hours drive, from the JSON's figures.
            items = plan.cost.breakdown.items
            if d.mode == "cloud":
                line = next(
                    i
                    for i in items
                    if i.kind == "cloud_rental" and i.detail.startswith(f"{d.workload}:")
                )
                share = line.amount * g.total_h / d.rental_hours
                # rental_hours is printed to 0.1 h: allow for that rounding
                slack = 0.5 + share * 0.051 / d.rental_hours
                assert total_cost == pytest.approx(share, abs=slack), example.name
            else:
                line = next(i for i in items if i.detail.startswith(f"{d.workload} running:"))
                assert 0 < total_cost <= line.amount
            assert f"| total per run | {total_h:,.2f} | {total_cost:,.0f} " in markdown
    assert trained >= 5  # 7B and 70B rentals, the night LoRA, the startup, south/north


def test_megatron_evaluates_100_forward_passes_every_1000_steps_and_hf_none() -> None:
    from gpusolve.estimate.goodput import evaluation_s

    # Megatron-LM's defaults: --eval-iters 100 every --eval-interval 1000 steps; 10,000 steps
    # whose forward pass takes 2 s evaluate 10 x 100 x 2 = 2,000 s.
    assert evaluation_s(steps=10_000, forward_s=2.0, stack="megatron") == pytest.approx(2000.0)
    assert evaluation_s(steps=10_000, forward_s=2.0, stack="hf") == 0.0


def test_gpt3s_batch_ramp_adds_its_extra_steps_fixed_cost() -> None:
    from gpusolve.estimate.goodput import rampup_s

    # 32k tokens ramped linearly to 4 Mi tokens per step over 4 B tokens: the ramp takes
    # 4e9 · ln(128) / (4,194,304 − 32,768) = 4,663.6 steps where the full batch takes
    # 4e9 / 4,194,304 = 953.7; at 1 s of fixed cost per step that is 3,709.9 s.
    got = rampup_s(tokens=1e12, batch_tokens=4_194_304, fixed_s=1.0)
    assert got == pytest.approx(4663.6 - 953.7, abs=0.2)
    assert rampup_s(tokens=1e9, batch_tokens=4_194_304, fixed_s=1.0) == 0.0  # shorter run
    assert rampup_s(tokens=1e12, batch_tokens=16_384, fixed_s=1.0) == 0.0  # under 32k


def test_a_pretraining_run_shows_evaluation_and_ramp_up_and_a_share_replaces_them() -> None:
    from tests.factories.hardware import H100, hgx

    from gpusolve.estimate import Layout, evaluate
    from gpusolve.models.params import Params
    from gpusolve.models.requirements import ModelShape, make_workload

    fields = dict(name="p", kind="pretrain", model=ModelShape(preset="llama-2-7b"), tokens=2e10)
    layout = Layout(2, 1, 2, 8, "zero1", micro_batch=1, grad_accum=32)
    est = evaluate(make_workload(**fields), hgx(H100), layout, Params())
    g = est.goodput
    assert g is not None and g.evaluation_s > 0 and g.rampup_s > 0
    assert g.overhead_s == pytest.approx(g.evaluation_s + g.rampup_s)
    given = make_workload(**fields, goodput={"overhead_share": 0.05})
    g2 = evaluate(given, hgx(H100), layout, Params()).goodput
    assert g2 is not None and g2.evaluation_s == 0.0 and g2.rampup_s == 0.0
    assert g2.overhead_s == pytest.approx(0.05 * g2.steady_s)
