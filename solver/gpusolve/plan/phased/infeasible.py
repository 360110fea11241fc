"""Why a purchase schedule (or a baseline) has no plan: the requirements that conflict
over the periods and how far each must move. The idea is the single plan's
(`explain/infeasible.py`), on the schedule's model in explain mode
(`optimize/phased/explain.py`, this package's `explain.py`)."""

from __future__ import annotations

from collections import defaultdict

from gpusolve.models.schedule import Conflict, ScheduleInfeasibility
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import Mode, PhasedSolution
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.phased.explain import ExplainInputs, build_explain
from gpusolve.plan.phased.inputs import PhasedInputs

NAMES: dict[Mode, str] = {"free": "schedule", "buy-now": "buy-now", "rent": "rent-as-you-go"}


def infeasibility(
    run: Inputs,
    phased_inputs: PhasedInputs,
    solutions: dict[Mode, PhasedSolution],
    config: ir.SolveConfig,
) -> list[ScheduleInfeasibility]:
    """For each schedule proven infeasible (the schedule, a baseline), the smallest set of
    requirements that conflict and how far each must move. A baseline is searched only when
    its own reason says nothing yet: renting with no cloud offer for a workload is named from
    the inputs, and a baseline of a schedule that has no plan itself fails for the
    schedule's reasons (each search re-solves the model many times)."""
    failed = [m for m, s in solutions.items() if s.status == "infeasible"]
    if not failed:
        return []
    said = {"rent": _no_rental(run, phased_inputs)}
    searched = [m for m in failed if m == "free" or ("free" not in failed and not said.get(m))]
    explained = build_explain(run, phased_inputs) if searched else None
    return [
        _conflicts(run, phased_inputs, explained, mode, solutions[mode], config)
        if explained is not None and mode in searched
        else _named(mode, [said.get(mode), solutions[mode].reason, _as_schedule(failed, mode)])
        for mode in failed
    ]


def _as_schedule(failed: list[Mode], mode: Mode) -> str | None:
    return (
        "the schedule itself has no plan (above)" if mode != "free" and "free" in failed else None
    )


def _named(mode: Mode, reasons: list[str | None]) -> ScheduleInfeasibility:
    """A baseline's infeasibility by its reasons alone, without a conflict search."""
    why = "; ".join(r for r in reasons if r) or "no schedule of this kind meets the demand"
    return ScheduleInfeasibility(schedule=NAMES[mode], reason=why, conflicting=[], minimal=True)


def _conflicts(
    run: Inputs,
    phased_inputs: PhasedInputs,
    ex: ExplainInputs,
    mode: Mode,
    solution: PhasedSolution,
    config: ir.SolveConfig,
) -> ScheduleInfeasibility:
    from gpusolve.optimize.phased.explain import explain_phased

    headline = _no_rental(run, phased_inputs) if mode == "rent" else None
    found = explain_phased(ex.instance, ex.requirements, config, mode)
    why = [r for r in (headline, solution.reason) if r]
    if found is None:
        why.append(
            "every stated requirement can hold at once: the limit is in the hardware itself "
            "(rack space, the catalogue's sizes)"
        )
        return ScheduleInfeasibility(
            schedule=NAMES[mode], reason="; ".join(why), conflicting=[], minimal=True
        )
    if not found.conflict:
        why.append("the explanation ran out of time; try a longer --time-limit")
        return ScheduleInfeasibility(
            schedule=NAMES[mode],
            reason="; ".join(why),
            conflicting=[],
            minimal=False,
            timed_out=True,
        )
    why.append("these requirements cannot all hold together")
    conflicting = [
        Conflict(
            requirement=n,
            detail=ex.requirements[n].description,
            suggestion=_suggest(run, ex, n, mode, config),
        )
        for n in found.conflict
    ]
    return ScheduleInfeasibility(
        schedule=NAMES[mode],
        reason="; ".join(why),
        conflicting=conflicting,
        minimal=found.minimal,
        timed_out=found.timed_out,
    )


def _no_rental(run: Inputs, phased_inputs: PhasedInputs) -> str | None:
    """Renting as you go needs a rental for every workload in every period it runs."""
    missing: dict[str, list[int]] = defaultdict(list)
    for p, inst in enumerate(phased_inputs.instance.instances):
        rented = {c.workload for c in inst.cloud if not c.violates}
        for w in inst.workloads:
            if w not in rented:
                missing[w].append(p)
    if not missing:
        return None
    allowed = run.reqs.regions.allowed
    where = f" in the allowed regions [{', '.join(allowed)}]" if allowed else ""
    said = [
        f"{w} (P{ps[0]}-P{ps[-1]})" if len(ps) > 1 else f"{w} (P{ps[0]})"
        for w, ps in missing.items()
    ]
    return f"no cloud offer{where} can run {', '.join(said)}"


def _suggest(run: Inputs, ex: ExplainInputs, name: str, mode: Mode, config: ir.SolveConfig) -> str:
    from gpusolve.optimize.phased.explain import move

    kind, _, subject = name.partition(":")
    if kind == "regions":
        return _regions(ex, name)
    if kind == "rule":
        return f"disable it (a --rules file with `disable: [{subject}]`) or override it"
    if kind == "deadline":
        return "extend the deadline"
    r = move(ex.instance, ex.requirements, name, config, mode)
    if r.outcome == "not_enough":
        return "relaxing this alone is not enough: another requirement listed must move too"
    if r.outcome == "unknown":
        return "how far it must move was not found within the time limit"
    unsure = "" if r.outcome == "least" else "; a smaller move may do: the search ran out of time"
    periods = ex.instance.periods
    cur = run.reqs.currency
    if kind in ("capex", "capex_year") and r.needed is not None:
        limit = _limit(run, name)
        if limit is None or r.needed <= limit:
            return "no move of this limit alone was found to help"
        what = "capex cap" if name == "capex" else f"year-{subject} capex budget"
        more = r.needed - limit
        return f"feasible if the {what} is {more:,} {cur} higher (at least {r.needed:,}){unsure}"
    if kind == "racks" and r.needed is not None:
        have = next(
            i.sites[subject].racks_available for i in ex.instance.instances if subject in i.sites
        )
        return f"feasible with {r.needed} racks at {subject} ({r.needed - have} more){unsure}"
    if kind == "demand":
        w = subject.rpartition(":")[0]
        if r.needed is None:
            return (
                f"feasible only with {w} served in no period: another requirement listed "
                "must move too"
            )
        p = periods[r.needed]
        return f"feasible if {w} is served from month {p.start_month} (P{p.index}) on{unsure}"
    if kind == "available" and r.needed is not None and r.needed < len(periods):
        p = periods[r.needed]
        return f"feasible if {subject} could be ordered from month {p.start_month}{unsure}"
    if kind == "available":
        return f"feasible if {subject} were available earlier{unsure}"
    if kind == "lead_time":
        return f"feasible if {subject} worked in the period it is ordered in{unsure}"
    return f"feasible with this relaxed alone{unsure}"


def _limit(run: Inputs, name: str) -> int | None:
    from gpusolve.models.money import to_money

    budget = run.reqs.budget
    if name == "capex":
        return to_money(budget.capex_max) if budget.capex_max is not None else None
    year = int(name.partition(":")[2])
    years = budget.capex_by_year or ()
    return to_money(years[year]) if year < len(years) else None


def _regions(ex: ExplainInputs, name: str) -> str:
    regions: set[str] = set()
    for inst in ex.instance.instances:
        for o in inst.owned:
            for pl in o.placements:
                if name in o.violates | pl.violates:
                    regions.add(inst.sites[pl.site].region)
        regions |= {c.region for c in inst.cloud if name in c.violates}
    return "allow one of: " + ", ".join(sorted(regions)) if regions else "allow another region"
