"""A solved phased model -> the `Schedule` `plan` prints, with its two baselines."""

from __future__ import annotations

from collections import defaultdict

from gpusolve.models.periods import fiscal_year
from gpusolve.models.schedule import (
    Baseline,
    PeriodSpend,
    Purchase,
    Running,
    Schedule,
    SchedulePeriod,
    ScheduleStatus,
    YearCapex,
)
from gpusolve.optimize.phased.ir import PeriodPlan, PhasedInstance, PhasedSolution

MODEL_NOTES = (
    "each period is priced as a single plan of the same inputs: exact rack packing, the "
    "compute fabric and shared storage, bandwidth by duty, N+1 spares, the inventory kept "
    "or sold; a schedule of one period is the single plan, to the yuan",
    "a server bought in a period works from the first period that starts after its lead "
    "time; racks, once contracted, run to the horizon (or the offer's minimum term); the "
    "network and storage bought stay (a period pays what it adds)",
    "an owned server out of service in a period is powered off (no energy); one bought "
    "ahead of need waits in storage, without a rack of its own",
    "owned servers are sold, if at all, at the start; objectives other than min-tco and "
    "scenarios are not planned over periods",
)


def _solver_note(s: PhasedSolution) -> str:
    return (
        f"solved by {s.solver} (--schedule-solver: race by default, CP-SAT and HiGHS at once, "
        "the answer by the work each did; highs or cp-sat alone)"
    )


def schedule_status(s: PhasedSolution) -> ScheduleStatus:
    """The plan's status vocabulary: a search that ended without a schedule or a proof is
    a "timeout" (as for a single plan)."""
    if s.status in ("optimal", "feasible", "infeasible"):
        return s.status
    return "timeout"


def _purchases(counts: dict[tuple[str, str], int]) -> list[Purchase]:
    return [Purchase(server=k, site=s, servers=n) for (k, s), n in sorted(counts.items())]


def _period(pp: PeriodPlan, rent_month: dict[str, int]) -> SchedulePeriod:
    c = pp.costs
    running = [
        Running(
            workload=ch.workload,
            option=ch.option,
            server=ch.sku,
            site=ch.site,
            offer=ch.offer,
            count=ch.servers,
            share=ch.share_permille / 1000,
        )
        # A split service's burst right after its base (a stable sort by workload).
        for ch in sorted((*pp.choices, *pp.bursts), key=lambda c: c.workload)
    ]
    # Per month in this period: the racks held, and what the period's energy, rentals and
    # site fees come to a month (rack_rent is each new contract's whole term).
    held = sum(rent_month.get(s, 0) * n for s, n in pp.racks.items())
    monthly = held + (c.energy + c.cloud + c.site_fixed) // max(1, pp.period.months)
    spend = PeriodSpend(
        capex=c.capex,
        rack_rent=c.rack_rent,
        site_fixed=c.site_fixed,
        energy=c.energy,
        cloud_rental=c.cloud,
        residual_value=c.residual,
        switching=c.switching,
        monthly=monthly,
    )
    return SchedulePeriod(
        index=pp.period.index,
        start_month=pp.period.start_month,
        months=pp.period.months,
        bought=_purchases(pp.bought),
        working=_purchases(pp.working),
        racks=dict(sorted(pp.racks.items())),
        running=running,
        spend=spend,
    )


def _baseline(name: str, best: PhasedSolution, b: PhasedSolution) -> Baseline:
    ours, theirs = best.objective_value, b.objective_value
    saving = theirs - ours if theirs is not None and ours is not None else None
    return Baseline(
        name=name, status=schedule_status(b), tco=b.tco, penalties=b.penalties, saving=saving
    )


def schedule(
    pi: PhasedInstance,
    best: PhasedSolution,
    buy_now: PhasedSolution,
    rent: PhasedSolution,
    currency: str,
) -> Schedule:
    rent_month = {
        s: site.rack_rent_month for inst in pi.instances for s, site in inst.sites.items()
    }
    years = sorted({fiscal_year(p.start_month) for p in pi.periods})
    capex = [
        YearCapex(
            year=y,
            capex=best.capex_by_year.get(y, 0),
            budget=pi.capex_by_year[y] if y < len(pi.capex_by_year) else None,
        )
        for y in years
    ]
    return Schedule(
        status=schedule_status(best),
        currency=currency,
        horizon_months=pi.horizon_months,
        tco=best.tco,
        penalties=best.penalties,
        resale=best.resale,
        objective=best.objective_value,
        best_bound=best.best_bound,
        wall_s=round(best.wall_s, 3),
        periods=[_period(pp, rent_month) for pp in best.periods],
        capex_by_year=capex if best.periods else [],
        baselines=[_baseline("buy-now", best, buy_now), _baseline("rent-as-you-go", best, rent)],
        model_notes=[*MODEL_NOTES, _solver_note(best)],
        reason=best.reason,
    )


def purchases_over(s: PhasedSolution) -> list[Purchase]:
    """Servers a schedule buys over the horizon, per (server, site)."""
    total: dict[tuple[str, str], int] = defaultdict(int)
    for pp in s.periods:
        for key, n in pp.bought.items():
            total[key] += n
    return [Purchase(server=k, site=site, servers=n) for (k, site), n in sorted(total.items())]


def difference(best: PhasedSolution, alt: PhasedSolution) -> str:
    """What `alt` runs that `best` never does, and the reverse, in words."""
    from gpusolve.optimize.phased.alternatives import schedule_key

    mine, theirs = set(schedule_key(best)), set(schedule_key(alt))

    def said(keys: set[tuple[str, str, str]]) -> str:
        return ", ".join(
            f"{w} on {what}" + (f" at {site}" if site else "") for w, what, site in sorted(keys)
        )

    parts = []
    if theirs - mine:
        parts.append("runs " + said(theirs - mine))
    if mine - theirs:
        parts.append("never " + said(mine - theirs))
    return "; ".join(parts) or "same hardware and sites"


def delta(a: int | None, b: int | None) -> int | None:
    """a - b, when both are known."""
    return a - b if a is not None and b is not None else None
