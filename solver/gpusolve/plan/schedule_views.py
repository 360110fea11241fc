"""What a `Schedule` shows beyond the schedule itself: each period's bill of materials and
capacity against demand, and the best single-period plan as a third baseline."""

from __future__ import annotations

from gpusolve.models.plan import SourceRef
from gpusolve.models.schedule import Baseline, Purchase, Schedule
from gpusolve.optimize.phased_ir import PhasedInstance, PhasedSolution
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.peak import NOTE, SinglePeriod
from gpusolve.plan.schedule import schedule_status
from gpusolve.plan.schedule_bom import period_boms
from gpusolve.plan.schedule_capacity import period_capacity


def _sources(run: Inputs, best: PhasedSolution) -> list[SourceRef]:
    from gpusolve.load.catalog import sources_of

    if run.loaded is None:
        return []
    used = [k for pp in best.periods for k, _s in pp.bought]
    used += [s for pp in best.periods for s in pp.racks]
    used += [c.offer for pp in best.periods for c in pp.choices if c.offer]
    return sources_of(run.loaded, list(dict.fromkeys(used)))


def with_periods_detail(
    s: Schedule, pi: PhasedInstance, best: PhasedSolution, run: Inputs
) -> Schedule:
    """The schedule with each period's bill of materials and capacity against demand."""
    boms = period_boms(pi, best, run.catalog, _sources(run, best))
    capacity = period_capacity(pi, best, run.reqs)
    periods = [
        p.model_copy(update={"bom": b, "capacity": c})
        for p, b, c in zip(s.periods, boms, capacity, strict=True)
    ]
    return s.model_copy(update={"periods": periods})


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
