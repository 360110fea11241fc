"""What a `Schedule` shows beyond the schedule itself: each period's bill of materials and
capacity against demand, and the best single-period plan as a third baseline."""

from __future__ import annotations

from gpusolve.candidates.prepare import Prepared
from gpusolve.models.plan import Deployment, SourceRef
from gpusolve.models.schedule import Baseline, Purchase, Schedule
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import PeriodPlan, PhasedSolution
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.phased.baseline import NOTE
from gpusolve.plan.phased.bom import period_boms
from gpusolve.plan.phased.capacity import period_capacity
from gpusolve.plan.phased.inputs import PhasedInputs
from gpusolve.plan.phased.schedule import schedule_status
from gpusolve.plan.solved import SinglePeriod


def _sources(run: Inputs, best: PhasedSolution) -> list[SourceRef]:
    from gpusolve.load.catalog import sources_of

    if run.loaded is None:
        return []
    used = [k for pp in best.periods for k, _s in pp.bought]
    used += [s for pp in best.periods for s in pp.racks]
    used += [c.offer for pp in best.periods for c in (*pp.choices, *pp.bursts) if c.offer]
    return sources_of(run.loaded, list(dict.fromkeys(used)))


def with_periods_detail(
    s: Schedule, phased: PhasedInputs, best: PhasedSolution, run: Inputs
) -> Schedule:
    """The schedule with each period's bill of materials, capacity against demand and
    deployments (what runs each workload, as a single plan's deployment)."""
    pi = phased.instance
    goods = phased.prepared[0].cand.vat_goods if phased.prepared else 1.0
    boms = period_boms(pi, best, run.catalog, _sources(run, best), goods)
    capacity = period_capacity(pi, best, run.reqs)
    periods = [
        p.model_copy(update={"bom": b, "capacity": c, "deployments": _deployments(pp, prep)})
        for p, b, c, pp, prep in zip(
            s.periods, boms, capacity, best.periods, phased.prepared, strict=True
        )
    ]
    return s.model_copy(update={"periods": periods})


def _deployments(pp: PeriodPlan, prepared: Prepared) -> list[Deployment]:
    """The period's choices as the single plan describes its deployments."""
    from gpusolve.explain import parts

    choices = tuple(ir.Choice(c.workload, c.option, c.site) for c in pp.choices)
    solution = ir.Solution(status="optimal", choices=choices)
    return parts.deployments(solution, prepared.cand, prepared.reqs)


def single_baseline(best: PhasedSolution, single: SinglePeriod, currency: str) -> Baseline:
    """The single-period plan's fleet, priced over the periods, as a baseline."""
    p = single.priced
    saving = (
        p.objective_value - best.objective_value
        if p.objective_value is not None and best.objective_value is not None
        else None
    )
    own = (
        f"; its TCO in the single plan's own model: {single.tco:,.0f} {currency}"
        if single.tco
        else ""
    )
    why = f"; {p.reason}" if p.reason else ""
    return Baseline(
        name="single-period",
        status=schedule_status(p),
        tco=p.tco,
        penalties=p.penalties,
        saving=saving,
        bought=[
            Purchase(server=k, site=s, servers=n) for (k, s), n in sorted(single.fleet.items())
        ],
        note=NOTE + own + why,
    )


def with_single(s: Schedule, baseline: Baseline) -> Schedule:
    return s.model_copy(update={"baselines": [*s.baselines, baseline]})
