"""Experiment: hint stage 1 with the spreadsheet plan (each workload's cheapest option).

The greedy plan is computed as in `baseline.py` (choices fixed, packed exactly by the
optimiser on the restricted instance, a few seconds at XL) and given to CP-SAT as a hint on
the choice Bools and server counts of the full model. Reports, for the same time limit, the
objective and bound with and without the hint. Nothing in solver/ is edited.

    python benchmarks/experiments/hint.py --scale XL --seeds 0-2 --limit 30
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ortools.sat.python import cp_model

from baseline import greedy_instance
from generator import generate
from gpusolve.optimize.ir import Solution, SolveConfig
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.solve import primary, solve


def greedy_plan(instance_scale: str, seed: int) -> tuple[Solution, float]:
    instance = generate(instance_scale, seed)
    start = time.perf_counter()
    plan = solve(greedy_instance(instance), SolveConfig(time_limit_s=60, workers=1))
    return plan, time.perf_counter() - start


def complete(built: Built, plan: Solution, limit: float) -> dict[int, int]:
    """Every variable's value in the full model for the greedy choices: the choices are
    fixed and the full model packs them (a partial hint is not repaired in time at XL)."""
    model = built.model.clone()
    chosen = {(c.option, c.site) for c in plan.choices}
    for o in built.owned:
        model.add(o.var == int((o.option.key, o.placement.site) in chosen))
    for c in built.cloud:
        model.add(c.var == int((c.option.key, None) in chosen))
    objective, _ = primary(built)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = limit
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {}
    return {v.index: int(solver.value(v)) for v in built.all_vars()}


def stage1(
    built: Built, plan: Solution | None, workers: int, limit: float
) -> tuple[str, float, float, float]:
    start = time.perf_counter()
    model = built.model.clone()
    objective, _ = primary(built)
    model.minimize(objective)
    if plan is not None:
        values = complete(built, plan, limit / 3)
        for v in built.all_vars():
            if v.index in values:
                model.add_hint(v, values[v.index])
        limit -= time.perf_counter() - start
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.max_time_in_seconds = limit
    status = solver.solve(model)
    wall = time.perf_counter() - start
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.status_name(status), float("nan"), float("nan"), wall
    return solver.status_name(status), solver.objective_value, solver.best_objective_bound, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="XL")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=float, default=30.0)
    args = ap.parse_args()
    a, _, z = args.seeds.partition("-")
    for seed in range(int(a), int(z or a) + 1):
        plan, greedy_s = greedy_plan(args.scale, seed)
        built = build(generate(args.scale, seed))
        s0, v0, b0, w0 = stage1(built, None, args.workers, args.limit)
        s1, v1, b1, w1 = stage1(built, plan, args.workers, args.limit)
        print(
            f"{args.scale} seed {seed}: greedy plan {plan.objective_value} in {greedy_s:.1f}s | "
            f"no hint {s0} {v0:.0f} (bound {b0:.0f}) {w0:.1f}s | "
            f"hint {s1} {v1:.0f} (bound {b1:.0f}) {w1:.1f}s",
            flush=True,
        )


if __name__ == "__main__":
    main()
