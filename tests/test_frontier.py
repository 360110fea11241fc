"""`gpusolve frontier`: non-dominated (cost, time) plans from a deadline sweep."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import jsonschema
from tests.support.shipped import ROOT

from gpusolve.analyses.frontier import factors, non_dominated
from gpusolve.models.frontier import FrontierPoint

SCHEMA = json.loads((ROOT / "schemas" / "frontier.schema.json").read_text())


def point(tco: float, hours: float) -> FrontierPoint:
    return FrontierPoint(deadline_factor=1, tco=tco, capex=0, makespan_h=hours, hardware=[])


def test_factors_are_geometric_and_include_the_ends() -> None:
    assert factors(3, 0.25, 4.0) == [0.25, 1.0, 4.0]
    assert factors(1, 0.5, 2.0) == [1.0]


def test_non_dominated_keeps_the_trade_off_only() -> None:
    pts = [point(10, 100), point(5, 200), point(12, 150), point(5, 250), point(10, 100)]
    kept = non_dominated(pts)
    assert [(p.tco, p.makespan_h) for p in kept] == [(10, 100), (5, 200)]


def test_frontier_of_the_pretraining_example(gpusolve, tmp_path: Path) -> None:
    # Market global: the frontier over every card; in market cn only rentals remain.
    example = (ROOT / "examples" / "pretrain-70b-infiniband.yaml").read_text(encoding="utf-8")
    path = str(tmp_path / "pretrain-70b-global.yaml")
    Path(path).write_text("market: global\n" + example, encoding="utf-8")
    result = gpusolve("frontier", "-q", path, "--points", "4", "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    jsonschema.validate(data, SCHEMA)
    points = data["points"]
    assert len(points) >= 2
    # Fastest first; along the frontier, each slower plan is strictly cheaper.
    times = [p["makespan_h"] for p in points]
    costs = [p["tco"] for p in points]
    assert times == sorted(times)
    assert all(a > b for a, b in itertools.pairwise(costs))
    for p in points:
        assert p["makespan_h"] <= 1440 * p["deadline_factor"] + 1e-6


def test_frontier_needs_a_deadline(gpusolve, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "workloads:\n  - name: s\n    kind: inference\n    model: {preset: llama-2-7b}\n"
        "    target_tokens_per_s: 100\n"
    )
    result = gpusolve("frontier", "-q", str(path))
    assert result.code == 2 and "deadline" in result.err


def test_each_point_is_the_plan_at_its_deadlines() -> None:
    """A frontier point is the plan `plan` makes with every deadline scaled by its factor:
    the same instance (small jobs rented only, work beyond the horizon dropped), so the
    same TCO. On the day/night example at x2, a point used to buy L20 servers whose 1,000
    night runs of 17.3 h do not fit in the 36-month horizon (the frontier skipped that
    filter, which `plan` applies), 265,000 CNY below anything `plan` could buy."""
    from gpusolve.analyses.frontier import _scaled, sweep
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan import make_plan
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.solved import PlanOptions

    config = SolveConfig(time_limit_s=30, workers=1, seed=1)
    run = prepare_run(ROOT / "examples" / "chat-day-lora-night.yaml", [], [])
    scale = [1.0, 2.0]
    frontier = sweep(run.reqs, run.catalog, run.policies, scale, config)
    assert frontier.points
    for p in frontier.points:
        scaled = dataclasses.replace(run, reqs=_scaled(run.reqs, p.deadline_factor))
        plan = make_plan(scaled, PlanOptions(config=config)).plan
        assert plan.cost is not None, p.deadline_factor
        assert plan.cost.tco == p.tco, p.deadline_factor
