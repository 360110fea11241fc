"""Experiment: replace the per-rack fallback by a packing relaxation plus lazy cuts.

At sites whose maximal fills exceed `pattern_limit` the optimiser falls back to one
integer vector per rack (bins). This experiment keeps the optimiser's model as built,
except that `gpusolve.optimize.model._bin_packing` is swapped at run time (nothing in
solver/ is edited) for an aggregate relaxation of that site's packing:

    R = racks at the site, D_h = servers of shape h there,
    sum_h power_h D_h <= rack_w R,   sum_h units_h D_h <= rack_units R,
    D_h <= per_rack_h R,
    sum_{h: power_h > rack_w/(k+1)} D_h <= k R   and the same for units, k = 1..4
    (no rack holds k+1 items each larger than 1/(k+1) of it).

Stage 1 is then solved in a loop (logic-based Benders): read D at each relaxed site,
compute the exact minimum number of racks for it (a tiny pattern IP, D is small), and if
it exceeds R add the monotone cut  (D_h >= D*_h for all h)  =>  R >= R*  (more servers
never need fewer racks), then re-solve. When no cut is violated, the master's plan packs
exactly into R racks everywhere, so its cost is achievable and, the master being a
relaxation, optimal. The optimum is compared with the unmodified model's.

    python benchmarks/experiments/lazy_packing.py --scale M --seeds 0-9 --workers 2
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ortools.sat.python import cp_model

from generator import generate
from gpusolve.optimize import model as model_module
from gpusolve.optimize.ir import Instance
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.patterns import Shape, SitePatterns, max_count, maximal_fills
from gpusolve.optimize.solve import primary


@dataclass
class Relaxed:
    site: str
    shapes: tuple[Shape, ...]
    demand: list[Any]  # D_h expressions
    racks: Any  # R
    rack_w: int
    rack_units: int


RELAXED: list[Relaxed] = []


def relaxed_packing(b: Any, site: Any, pats: SitePatterns, servers: Any, demand_ub: Any) -> Any:
    """Drop-in for `model._bin_packing`: the aggregate relaxation above."""
    total_ub = model_module._racks_bound(b, site, pats, demand_ub)
    m: cp_model.CpModel = b.model
    racks = m.new_int_var(0, total_ub, f"R[{site.id}]")
    demand = [sum(servers[(k, site.id)] for k in members) for members in pats.members]
    shapes = pats.shapes
    m.add(sum(s.power_w * d for s, d in zip(shapes, demand, strict=True)) <= site.rack_w * racks)
    m.add(
        sum(s.rack_units * d for s, d in zip(shapes, demand, strict=True))
        <= site.rack_units * racks
    )
    for s, d in zip(shapes, demand, strict=True):
        m.add(d <= max_count(s, site.rack_w, site.rack_units) * racks)
    for k in range(1, 5):
        for sizes, cap in (
            ([s.power_w for s in shapes], site.rack_w),
            ([s.rack_units for s in shapes], site.rack_units),
        ):
            big = [d for size, d in zip(sizes, demand, strict=True) if size * (k + 1) > cap]
            if big:
                m.add(sum(big) <= k * racks)
    RELAXED.append(Relaxed(site.id, shapes, demand, racks, site.rack_w, site.rack_units))
    values = {
        "site": site,
        "patterns": pats,
        "pattern_racks": (),
        "pattern_ub": (),
        "bins": (),
        "total": racks,
        "total_ub": total_ub,
    }
    fields = {f.name for f in dataclasses.fields(model_module.SitePacking)}
    return model_module.SitePacking(**{k: v for k, v in values.items() if k in fields})


def exact_racks(shapes: tuple[Shape, ...], counts: list[int], rack_w: int, rack_units: int) -> int:
    """Fewest racks holding `counts` servers per shape (patterns capped by the counts)."""
    idx = [i for i, c in enumerate(counts) if c > 0]
    if not idx:
        return 0
    sub = [shapes[i] for i in idx]
    caps = [counts[i] for i in idx]
    fills = maximal_fills(sub, rack_w, rack_units, None, caps)
    m = cp_model.CpModel()
    r = [m.new_int_var(0, max(caps), f"r{j}") for j in range(len(fills))]
    for h, need in enumerate(caps):
        m.add(sum(f[h] * x for f, x in zip(fills, r, strict=True)) >= need)
    m.minimize(sum(r))
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    status = s.solve(m)
    assert status == cp_model.OPTIMAL
    return int(s.objective_value)


def solve_lazy(
    built: Built, workers: int, limit: float, presolve: bool = True
) -> tuple[float, int, int, str]:
    """Stage 1 with lazy packing cuts: wall, objective, rounds, status."""
    objective, _ = primary(built)
    cuts: list[tuple[Relaxed, list[int], int]] = []
    start = time.perf_counter()
    rounds = 0
    while True:
        rounds += 1
        model = built.model.clone()
        for rel, floor, racks in cuts:
            add_cut(model, rel, floor, racks)
        model.minimize(objective)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = workers
        solver.parameters.cp_model_presolve = presolve
        solver.parameters.max_time_in_seconds = max(0.01, limit - (time.perf_counter() - start))
        status = solver.solve(model)
        if status != cp_model.OPTIMAL:
            name = solver.status_name(status)
            if status == cp_model.FEASIBLE:
                value = solver.objective_value
                gap = (value - solver.best_objective_bound) / max(1.0, value)
                name += f" gap {100 * gap:.2f}% (relaxation bound)"
            return time.perf_counter() - start, -1, rounds, name
        violated = False
        for rel in RELAXED:
            counts = [int(solver.value(d)) for d in rel.demand]
            have = int(solver.value(rel.racks))
            need = exact_racks(rel.shapes, counts, rel.rack_w, rel.rack_units)
            if need > have:
                cuts.append((rel, counts, need))
                violated = True
        if not violated:
            return time.perf_counter() - start, int(solver.value(objective)), rounds, "OPTIMAL"


def add_cut(model: cp_model.CpModel, rel: Relaxed, counts: list[int], racks: int) -> None:
    """(D_h >= counts_h for every h with counts_h > 0)  =>  R >= racks."""
    trigger = model.new_bool_var("")
    escapes = [trigger]
    for d, c in zip(rel.demand, counts, strict=True):
        if c > 0:
            lit = model.new_bool_var("")
            model.add(d <= c - 1).only_enforce_if(lit)
            escapes.append(lit)
    model.add_bool_or(escapes)
    model.add(rel.racks >= racks).only_enforce_if(trigger)


def stage1(
    built: Built, workers: int, limit: float, presolve: bool = True
) -> tuple[float, int, str]:
    objective, _ = primary(built)
    model = built.model.clone()
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.cp_model_presolve = presolve
    solver.parameters.max_time_in_seconds = limit
    start = time.perf_counter()
    status = solver.solve(model)
    wall = time.perf_counter() - start
    value = int(solver.value(objective)) if status == cp_model.OPTIMAL else -1
    name = solver.status_name(status)
    if status == cp_model.FEASIBLE:
        gap = (solver.objective_value - solver.best_objective_bound) / solver.objective_value
        name += f" gap {100 * gap:.2f}%"
    return wall, value, name


def build_relaxed(instance: Instance) -> Built:
    RELAXED.clear()
    original = model_module._bin_packing
    model_module._bin_packing = relaxed_packing
    try:
        return build(instance)
    finally:
        model_module._bin_packing = original


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="M")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--skip-base", action="store_true")
    ap.add_argument("--presolve", type=int, default=1)
    args = ap.parse_args()
    a, _, b = args.seeds.partition("-")
    seeds = range(int(a), int(b or a) + 1)
    base_t: list[float] = []
    lazy_t: list[float] = []
    for seed in seeds:
        instance = generate(args.scale, seed)
        t0 = time.perf_counter()
        relaxed = build_relaxed(instance)
        build_s = time.perf_counter() - t0
        sites = len(RELAXED)
        wall, value, rounds, status = solve_lazy(
            relaxed, args.workers, args.limit, bool(args.presolve)
        )
        lazy_t.append(build_s + wall)
        line = (
            f"{args.scale} seed {seed}: lazy {build_s + wall:6.2f}s ({status}, {rounds} rounds, "
            f"{sites} relaxed sites) {value}"
        )
        if not args.skip_base:
            t0 = time.perf_counter()
            plain = build(instance)
            build_s = time.perf_counter() - t0
            wall0, value0, status0 = stage1(plain, args.workers, args.limit, bool(args.presolve))
            base_t.append(build_s + wall0)
            same = "same optimum" if value0 == value else "DIFFERENT OPTIMUM"
            line += f" | bins {build_s + wall0:6.2f}s ({status0}) {value0} {same}"
        print(line, flush=True)
    print(f"median lazy {statistics.median(lazy_t):.2f}s max {max(lazy_t):.2f}s")
    if base_t:
        print(f"median bins {statistics.median(base_t):.2f}s max {max(base_t):.2f}s")
    _ = math  # keep import for readers extending the cuts


if __name__ == "__main__":
    main()
