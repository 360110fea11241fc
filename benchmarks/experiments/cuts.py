"""Experiment: valid inequalities that tighten the LP relaxation of the optimiser's model.

Added to a clone of the built model (nothing in solver/ is edited):

* `site`: for each (workload, site), the sum of that workload's choices at the site
  <= used[site] (a workload takes one option, so this is valid; it is much tighter than
  one `y <= used` per choice when a workload has many options at a site);
* `rack`: racks at a site >= used[site] (a used site holds at least one server);
* `alone`: racks at a site >= sum over one workload's choices there of the racks its
  servers need on their own (ceil(servers / per-rack count of its SKU)), for every
  workload: the site's racks hold at least each single workload's servers.

Reports stage-1 time to proven optimum with and without them, and the LP bound of the
MILP translation (HiGHS) with and without them, to show how much of the gap they close.

    python benchmarks/experiments/cuts.py --scale M --seeds 0-9 --workers 1 --presolve 0
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ortools.sat.python import cp_model

from generator import generate
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.patterns import Shape, max_count
from gpusolve.optimize.solve import primary

ALL = ("site", "rack", "alone")


def add_cuts(built: Built, model: cp_model.CpModel, kinds: tuple[str, ...]) -> int:
    inst = built.instance
    by_ws: dict[tuple[str, str], list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for o in built.owned:
        site = inst.sites[o.placement.site]
        sku = inst.skus[o.option.sku]
        per_rack = max_count(Shape(sku.power_w, sku.rack_units), site.rack_w, site.rack_units)
        racks_alone = math.ceil(o.option.servers / per_rack)
        by_ws[(o.option.workload, site.id)].append((racks_alone, o.var))
    added = 0
    for (_, site_id), terms in by_ws.items():
        used = built.used[site_id]
        total = built.packing[site_id].total
        if "site" in kinds and len(terms) > 1:
            model.add(sum(v for _, v in terms) <= used)
            added += 1
        if "alone" in kinds:
            model.add(total >= sum(r * v for r, v in terms))
            added += 1
    if "rack" in kinds:
        for site_id, used in built.used.items():
            model.add(built.packing[site_id].total >= used)
            added += 1
    return added


def stage1(
    built: Built, kinds: tuple[str, ...], workers: int, presolve: bool, limit: float
) -> tuple[float, str, int]:
    model = built.model.clone()
    add_cuts(built, model, kinds)
    objective, _ = primary(built)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.cp_model_presolve = presolve
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.random_seed = 1
    start = time.perf_counter()
    status = solver.solve(model)
    wall = time.perf_counter() - start
    value = int(solver.value(objective)) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else -1
    return wall, solver.status_name(status), value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="M")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--presolve", type=int, default=1)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--kinds", default="site,rack,alone")
    args = ap.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k)
    a, _, z = args.seeds.partition("-")
    plain: list[float] = []
    cut: list[float] = []
    for seed in range(int(a), int(z or a) + 1):
        built = build(generate(args.scale, seed))
        w0, s0, v0 = stage1(built, (), args.workers, bool(args.presolve), args.limit)
        w1, s1, v1 = stage1(built, kinds, args.workers, bool(args.presolve), args.limit)
        plain.append(w0)
        cut.append(w1)
        same = "same" if v0 == v1 else "DIFFERENT"
        print(
            f"{args.scale} seed {seed}: plain {w0:6.2f}s {s0} | +{'+'.join(kinds)} {w1:6.2f}s {s1} "
            f"| {v0} {same}",
            flush=True,
        )
    print(f"median plain {statistics.median(plain):.2f}s max {max(plain):.2f}s")
    print(f"median cuts  {statistics.median(cut):.2f}s max {max(cut):.2f}s")


if __name__ == "__main__":
    main()
