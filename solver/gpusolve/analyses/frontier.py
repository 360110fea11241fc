"""The cost <-> time frontier: how much finishing sooner costs, down to the fastest plan.

Notation: T(p) is a plan's makespan, the longest time to train of its training workloads;
C(p) its TCO. The frontier is the set of plans no other plan beats on both.

Two sweeps, each a sequence of ordinary plans (`candidates/prepare.py` prepares every point's
instance as `plan` prepares its own, so the point at the deadlines as written is the plan):
- looser: every training deadline multiplied by factors above 1 (cheaper, slower plans);
- faster: an epsilon-constraint on time (cpsat-notes §3.3). From the plan at the deadlines
  as written, every training run is capped at (1 − gain) × T of the last point, and the
  cheapest plan under that cap is the next point: more servers, more instances for fewer
  hours, other cards. Time is strictly decreasing along it by construction. It stops where
  no plan is faster, and says why: per workload, what bounds the fastest option the
  candidate space holds (an offer's instance limit, the sites' racks, the global batch,
  the layout search), or a budget/rack conflict, or the time limit, or --points.

The looser points do not depend on one another: they run as tasks on a Ray cluster when one
is given (`cluster.py`), else on the local process pool (`pool.py`); each is one
deterministic solve, so the points are the same either way. The plan at the deadlines as
written and the faster chain (each cap follows the last point) run here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gpusolve.candidates.prepare import prepare
from gpusolve.candidates.scaling import CandidateInputs
from gpusolve.models.catalog import Catalog
from gpusolve.models.frontier import Frontier, FrontierPoint
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import interrupt, ir

if TYPE_CHECKING:
    from gpusolve.analyses.cluster import Cluster
    from gpusolve.candidates.records import Candidates, OptionMeta

Progress = Callable[[str], None]

# Each faster point must be at least this much faster than the last: steps of under 10% in
# time are rarely worth a separate quote, and a floor keeps the sweep's length bounded.
DEFAULT_GAIN = 0.1


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


def capped(reqs: Requirements, cap_h: float) -> Requirements:
    """Every training run within `cap_h` hours (and within its own deadline)."""
    workloads = [
        w.model_copy(update={"deadline_hours": min(cap_h, w.deadline_hours or cap_h)})
        if w.is_training
        else w
        for w in reqs.workloads
    ]
    return reqs.model_copy(update={"workloads": workloads})


@dataclass(frozen=True)
class Sweep:
    """How far to look: `high` the loosest deadline factor, `looser` how many factors above 1,
    `max_points` how many plans to solve at most, `gain` the least relative speed-up from
    one faster point to the next, `floor_factor` a factor of the deadlines below which the
    faster sweep stops (None: down to the fastest plan)."""

    high: float = 4.0
    looser: int = 2
    max_points: int = 12
    gain: float = DEFAULT_GAIN
    floor_factor: float | None = None


@dataclass(frozen=True)
class _Outcome:
    point: FrontierPoint | None
    status: Literal["found", "infeasible", "timeout"]
    cand: Candidates
    without_options: list[str]


def _solve_at(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: ir.SolveConfig,
    factor: float | None,
    cap_h: float | None,
) -> _Outcome:
    from gpusolve.optimize.solve import solve

    cand = prepare(reqs, catalog, policies).cand
    missing = cand.workloads_without_options()
    if missing:
        return _Outcome(None, "infeasible", cand, missing)
    solution = solve(cand.instance, config)
    if solution.status == "unknown":  # out of time, not proven impossible
        return _Outcome(None, "timeout", cand, [])
    if solution.costs is None or solution.status not in ("optimal", "feasible"):
        return _Outcome(None, "infeasible", cand, [])
    times, hardware = [], []
    for choice in solution.choices:
        meta = cand.meta[choice.option]
        if meta.estimate.time_to_train_s:
            times.append(meta.estimate.time_to_train_s / 3600)
        hardware.append(f"{meta.workload}: {_what(meta)}")
    point = FrontierPoint(
        deadline_factor=factor,
        time_cap_h=cap_h,
        tco=float(solution.costs.tco),
        capex=float(solution.costs.capex),
        makespan_h=round(max(times, default=0.0), 2),
        hardware=hardware,
        proven_optimal=solution.status == "optimal",
    )
    return _Outcome(point, "found", cand, [])


@dataclass(frozen=True)
class PointTask:
    """One looser point: the deadlines x `factor`. `analyse` runs in a pool worker (the
    run's inputs from the fork) or a Ray worker (the run's files read again)."""

    factor: float
    config: ir.SolveConfig

    def analyse(self, inputs: Any) -> tuple[FrontierPoint | None, str]:
        reqs = _scaled(inputs.reqs, self.factor)
        out = _solve_at(reqs, inputs.catalog, inputs.policies, self.config, self.factor, None)
        return out.point, out.status


def looser_points(
    tasks: Sequence[PointTask], inputs: Any, workers: int, cluster: Cluster | None
) -> list[tuple[FrontierPoint | None, str]]:
    """Every looser point, in the tasks' order: on the cluster, the pool, or here."""
    if cluster is not None:
        return list(cluster.run(tasks))
    if workers <= 1 or len(tasks) <= 1:
        return [t.analyse(inputs) for t in tasks]
    from gpusolve.analyses.pool import map_pool

    return map_pool(tasks, workers, inputs)


def _what(meta: OptionMeta) -> str:
    gpus = meta.estimate.layout.gpus
    if meta.server is not None:
        return f"buy {meta.nodes} x {meta.server} ({gpus} x {meta.card})"
    hours = f", {meta.rental_hours:,.0f} h" if meta.rental_hours else ""
    return f"rent {meta.nodes} x {meta.cloud_offer} ({gpus} x {meta.card}{hours})"


def sweep(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: ir.SolveConfig,
    how: Sweep = Sweep(),
    progress: Progress = lambda _: None,
    market_note: str | None = None,
    workers: int = 1,
    cluster: Cluster | None = None,
) -> Frontier:
    """The frontier of `reqs`: the plan at its deadlines, looser ones (over `workers`
    processes or on `cluster`), then faster ones."""
    found: list[FrontierPoint] = []
    infeasible: list[float] = []
    timed_out: list[float] = []
    looser = factors(how.looser + 1, 1.0, how.high)[1:] if how.looser and how.high > 1 else []
    budget = how.max_points
    progress("point 1: the deadlines as written")
    base = _solve_at(reqs, catalog, policies, config, 1.0, None)
    budget -= 1
    _keep(base, 1.0, found, infeasible, timed_out)  # first: it wins ties with looser points
    if interrupt.past_deadline():
        timed_out += looser[:budget]  # not searched: the command's time limit came first
    elif looser[:budget]:
        where = cluster.name if cluster is not None else f"{min(workers, budget)} process(es)"
        progress(f"points 2-{len(looser[:budget]) + 1}: deadlines x {looser[0]:g}.. on {where}")
        tasks = [PointTask(factor, config) for factor in looser[:budget]]
        inputs = CandidateInputs(reqs, catalog, policies)
        for task, (point, status) in zip(
            tasks, looser_points(tasks, inputs, workers, cluster), strict=True
        ):
            budget -= 1
            _keep_point(point, status, task.factor, found, infeasible, timed_out)
    if base.point is None:
        stop = _stop_at_base(base)
    else:
        stop = _faster(reqs, catalog, policies, config, how, base, budget, found, progress)
    if market_note:
        stop.append(market_note)
    points = non_dominated(found)
    chain_timed_out = any("time limit" in s for s in stop)
    return Frontier(
        currency=reqs.currency,
        horizon_months=reqs.horizon_months,
        points=points,
        infeasible_factors=sorted(infeasible),
        timed_out_factors=sorted(timed_out),
        stop_reason=stop,
        status=frontier_status(points, timed_out or ([0.0] if chain_timed_out else [])),
    )


def _keep_point(
    point: FrontierPoint | None,
    status: str,
    factor: float,
    found: list[FrontierPoint],
    infeasible: list[float],
    timed_out: list[float],
) -> None:
    if point is not None:
        found.append(point)
    elif status == "timeout":
        timed_out.append(factor)
    else:
        infeasible.append(factor)


def _keep(
    out: _Outcome,
    factor: float,
    found: list[FrontierPoint],
    infeasible: list[float],
    timed_out: list[float],
) -> None:
    if out.point is not None:
        found.append(out.point)
    elif out.status == "timeout":
        timed_out.append(factor)
    else:
        infeasible.append(factor)


def _stop_at_base(base: _Outcome) -> list[str]:
    if base.status == "timeout":
        return [
            "no plan found at the deadlines as written within --time-limit (not proven "
            "impossible); nothing faster was tried"
        ]
    return [
        "no plan meets the deadlines as written (`gpusolve plan` names the conflict); "
        "nothing faster exists"
    ]


def _faster(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: ir.SolveConfig,
    how: Sweep,
    base: _Outcome,
    budget: int,
    found: list[FrontierPoint],
    progress: Progress,
) -> list[str]:
    """Cap every training run below the last point's time until nothing is faster."""
    assert base.point is not None
    last = base.point.makespan_h
    floor_h = _floor_hours(reqs, how.floor_factor)
    while True:
        cap_h = round(last * (1 - how.gain), 4)
        if last <= 0 or cap_h <= 0:
            return ["the plan at the deadlines as written trains nothing: no time to shorten"]
        if floor_h is not None and cap_h < floor_h:
            return [f"stopped at --low: no run was asked below {hours(floor_h)} h"]
        if budget <= 0:
            return [
                f"stopped after {how.max_points} plans (--points); faster plans may exist "
                f"below {hours(last)} h"
            ]
        if interrupt.past_deadline():
            return [
                f"stopped at the command's time limit (--time-limit) after "
                f"{how.max_points - budget} plans; faster plans may exist below {hours(last)} h"
            ]
        progress(f"point {how.max_points - budget + 1}: every training run within {hours(cap_h)} h")
        out = _solve_at(capped(reqs, cap_h), catalog, policies, config, None, cap_h)
        budget -= 1
        if out.point is None:
            return _why_not_faster(out, reqs, base.cand, catalog, policies, config, cap_h)
        found.append(out.point)
        last = out.point.makespan_h


def _floor_hours(reqs: Requirements, floor_factor: float | None) -> float | None:
    if floor_factor is None:
        return None
    deadlines = [w.deadline_hours for w in reqs.workloads if w.deadline_hours]
    return max(deadlines) * floor_factor if deadlines else None


def _why_not_faster(
    out: _Outcome,
    reqs: Requirements,
    base: Candidates,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: ir.SolveConfig,
    cap_h: float,
) -> list[str]:
    within = f"with every training run within {hours(cap_h)} h"
    if out.status == "timeout":
        return [
            f"{within} no plan was found within --time-limit (not proven impossible; a "
            "longer --time-limit may go further)"
        ]
    if not out.without_options:
        from gpusolve.explain.infeasible import explain_infeasible

        why = explain_infeasible(capped(reqs, cap_h), catalog, policies, out.cand, [], config)
        named = "; ".join(r.detail for r in why.conflicting)
        return [f"{within} no plan exists: {named or why.reason}"]
    return [
        _fastest_line(workload, base, catalog, policies, cap_h) for workload in out.without_options
    ]


def hours(h: float) -> str:
    """Hours to a precision a reader can use: 1,032 / 29.5 / 0.88."""
    return f"{h:,.0f}" if h >= 100 else f"{h:.3g}"


def _fastest_line(
    workload: str,
    base: Candidates,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    cap_h: float,
) -> str:
    options = [
        m for m in base.meta.values() if m.workload == workload and m.estimate.time_to_train_s
    ]
    if not options:
        return f"{workload}: no option of the catalogue trains it within {hours(cap_h)} h"
    fastest = min(options, key=lambda m: m.estimate.time_to_train_s or 0.0)
    run_h = (fastest.estimate.time_to_train_s or 0.0) / 3600
    limit = _limit(fastest, catalog, policies[workload])
    return (
        f"{workload}: the fastest option is {_what(fastest)} at {hours(run_h)} h per run, "
        f"not within {hours(cap_h)} h; {limit}"
    )


def _limit(meta: OptionMeta, catalog: Catalog, policy: WorkloadPolicy) -> str:
    """What stops the fastest option from growing: the first bound it sits at."""
    from gpusolve.candidates.sizing import node_limit

    layout = meta.estimate.layout
    if meta.cloud_offer is not None:
        offer = catalog.cloud_offers[meta.cloud_offer]
        if meta.nodes >= offer.max_instances:
            return f"{offer.id} rents at most {offer.max_instances} instances (its max_instances)"
    elif meta.server is not None:
        server = catalog.servers[meta.server]
        sites = node_limit(server, catalog.colo_offers.values(), needs_fabric=meta.nodes > 1)
        if meta.nodes >= sites:
            return (
                f"the colocation offers hold at most {sites} x {server.id} on one fabric "
                "(racks available x servers per rack within its kW)"
            )
    if meta.nodes >= policy.params.max_nodes:
        return f"max_nodes is {policy.params.max_nodes} (rule parameter, H21)"
    if layout.grad_accum == 1 and layout.dp > 1:
        return (
            f"its {layout.dp} data-parallel ranks x micro-batch {layout.micro_batch} already "
            "take the whole global batch per step: more GPUs could only add tensor or "
            "pipeline parallelism, which the layout search found slower"
        )
    return (
        "no larger layout of this card was faster in the layout search (communication and "
        "the pipeline bubble grow faster than the compute shrinks)"
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
