"""Experiment: CP-SAT parameters on the optimiser's own model (stage 1: time to proof).

Builds the model with `gpusolve.optimize.model.build` (unchanged), then times stage 1
(min-tco, proven optimal) under several parameter sets. Nothing in solver/ is modified.

    python benchmarks/experiments/params.py --scale M --seeds 0-4 \
        --config base --config lin2:linearization_level=2 --workers 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ortools.sat.python import cp_model

from generator import generate
from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.solve import primary


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition(":")
    params = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    return name, params


def apply(solver: cp_model.CpSolver, params: dict[str, str]) -> None:
    for key, raw in params.items():
        if key == "subsolvers":
            solver.parameters.subsolvers.extend(raw.split("+"))
            continue
        current = getattr(solver.parameters, key)
        if isinstance(current, bool):
            setattr(solver.parameters, key, raw in ("1", "true", "True"))
        else:
            setattr(solver.parameters, key, type(current)(float(raw)))


def run_stage(
    built: Built, params: dict[str, str], workers: int, limit: float
) -> tuple[float, str, int, float]:
    """Stage 1 on a clone: wall, status, objective, bound."""
    model = built.model.clone()
    objective, _ = primary(built)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 1
    solver.parameters.max_time_in_seconds = limit
    apply(solver, params)
    start = time.perf_counter()
    status = solver.solve(model)
    wall = time.perf_counter() - start
    value = int(solver.value(objective)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else -1
    return wall, solver.status_name(status), value, solver.best_objective_bound


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="M")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--pattern-limit", type=int, default=2000)
    args = ap.parse_args()
    configs = [parse_config(c) for c in (args.config or ["base"])]
    times: dict[str, list[float]] = {name: [] for name, _ in configs}
    for seed in seeds_of(args.seeds):
        instance = generate(args.scale, seed)
        built = build(instance, BuildOptions(pattern_limit=args.pattern_limit))
        for name, params in configs:
            wall, status, value, _ = run_stage(built, params, args.workers, args.limit)
            times[name].append(wall)
            print(
                f"{args.scale} seed {seed} {name:>14}: {wall:6.2f}s {status:8} {value}", flush=True
            )
    for name, ts in times.items():
        print(f"median {name:>14}: {statistics.median(ts):6.2f}s  max {max(ts):6.2f}s")


if __name__ == "__main__":
    main()
