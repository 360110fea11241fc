"""The cost <-> time frontier: how much finishing sooner costs.

Every training deadline is scaled by a common factor (tighter and looser than the user's),
the cheapest plan is found at each, and the (total cost, longest training time) pairs that
no other point beats on both are kept. Time is monotone in the hardware bought, so a sweep
over deadlines traces the same frontier as an epsilon-constraint on time (cpsat-notes §3.3)
while reusing the planner unchanged: each point's instance is prepared as `plan` prepares
its own (`candidates/prepare.py`: small jobs rented only, work beyond the horizon dropped),
so the point at factor 1 is the plan's instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from gpusolve.candidates.prepare import prepare
from gpusolve.models.catalog import Catalog
from gpusolve.models.frontier import Frontier, FrontierPoint
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir


def factors(points: int, low: float, high: float) -> list[float]:
    """`points` factors spaced geometrically from low to high (both included)."""
    if points == 1:
        return [1.0]
    ratio = (high / low) ** (1 / (points - 1))
    return [round(low * ratio**i, 4) for i in range(points)]


def _scaled(reqs: Requirements, factor: float) -> Requirements:
    workloads = [
        w.model_copy(update={"deadline_hours": w.deadline_hours * factor})
        if w.deadline_hours is not None
        else w
        for w in reqs.workloads
    ]
    return reqs.model_copy(update={"workloads": workloads})


def sweep(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    scale: list[float],
    config: ir.SolveConfig,
    progress: Callable[[str], None] = lambda _: None,
) -> Frontier:
    from gpusolve.optimize.solve import solve

    found: list[FrontierPoint] = []
    infeasible: list[float] = []
    timed_out: list[float] = []
    for i, factor in enumerate(scale, 1):
        progress(f"point {i}/{len(scale)}: deadlines x {factor:g}")
        cand = prepare(_scaled(reqs, factor), catalog, policies).cand
        if cand.workloads_without_options():
            infeasible.append(factor)
            continue
        solution = solve(cand.instance, config)
        if solution.status == "unknown":  # out of time, not proven impossible
            timed_out.append(factor)
            continue
        if solution.costs is None or solution.status not in ("optimal", "feasible"):
            infeasible.append(factor)
            continue
        times, hardware = [], []
        for choice in solution.choices:
            meta = cand.meta[choice.option]
            if meta.estimate.time_to_train_s:
                times.append(meta.estimate.time_to_train_s / 3600)
            what = meta.server or f"cloud {meta.cloud_offer}"
            hardware.append(f"{meta.workload}: {meta.nodes} x {what}")
        found.append(
            FrontierPoint(
                deadline_factor=factor,
                tco=float(solution.costs.tco),
                capex=float(solution.costs.capex),
                makespan_h=round(max(times, default=0.0), 2),
                hardware=hardware,
                proven_optimal=solution.status == "optimal",
            )
        )
    points = non_dominated(found)
    return Frontier(
        currency=reqs.currency,
        horizon_months=reqs.horizon_months,
        points=points,
        infeasible_factors=infeasible,
        timed_out_factors=timed_out,
        status=frontier_status(points, timed_out),
    )


def frontier_status(
    points: list[FrontierPoint], timed_out: list[float]
) -> Literal["optimal", "feasible", "infeasible", "timeout"]:
    """optimal only when every point is proven and no factor ran out of time."""
    if not points:
        return "timeout" if timed_out else "infeasible"
    if timed_out or not all(p.proven_optimal for p in points):
        return "feasible"
    return "optimal"


def non_dominated(points: list[FrontierPoint]) -> list[FrontierPoint]:
    """Points no other point beats on both cost and time, fastest first."""
    keep: list[FrontierPoint] = []
    for p in points:
        beaten = any(
            (q.tco <= p.tco and q.makespan_h <= p.makespan_h)
            and (q.tco < p.tco or q.makespan_h < p.makespan_h)
            for q in points
        )
        if not beaten and all((q.tco, q.makespan_h) != (p.tco, p.makespan_h) for q in keep):
            keep.append(p)
    return sorted(keep, key=lambda p: (p.makespan_h, p.tco))
