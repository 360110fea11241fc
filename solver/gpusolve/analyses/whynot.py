"""`--why-not ID`: for each workload, why a card, server, colo or cloud offer was not chosen.

Per workload: the rejections of the candidates involving the item; then, when the plan
does not use the item for it, the plan with that workload forced onto the item
(`forced_onto`), solved again and compared with the plan figure by figure
(`explain/compare.py`). A plan hedged over a `scenarios:` block is forced in every
scenario and solved as the two-stage model, compared by what the hedge minimises
(expected or worst-case TCO plus penalties) and, in the scenario shown, figure by figure.
Without a plan (proven infeasible), only the rejections.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gpusolve.candidates.prepare import Prepared
from gpusolve.candidates.records import Candidates, OptionMeta
from gpusolve.explain import parts
from gpusolve.explain.compare import change, compare
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import WhyNot
from gpusolve.models.schedule import ScheduleWhyNot
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import PhasedSolution
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.phased.explain import first_month
from gpusolve.plan.phased.inputs import PhasedInputs
from gpusolve.plan.phased.schedule import delta, purchases_over
from gpusolve.plan.phased.schedule import difference as schedule_difference
from gpusolve.plan.solved import Hedged, Outcome, Phased, Solved

Progress = Callable[[str], None]


def run(solved: Solved, progress: Progress = lambda _: None) -> Outcome:
    """The plan with its `why_not` lines and the forced plans behind them; a schedule with
    its `why_not` (the schedule with the item forced into some period)."""
    item = solved.options.why_not
    solution = solved.solution
    if item is None or solution is None:
        return solved.plan
    config = solved.options.config
    if isinstance(solution, Phased):
        progress(f"explaining why not {item}")
        why = schedule_why_not(solved.run, solution.inputs, solution.best, item, config)
        return solved.plan.model_copy(update={"why_not": why})
    if isinstance(solution, Hedged):
        progress(f"explaining why not {item}")
        reasons, forced = hedged_why_not(item, solution, config)
    elif solution.solution is None:  # no plan: the rejections alone
        reasons, forced = why_not_report(item, solution.prepared, None, config)
    else:
        progress(f"explaining why not {item}")
        reasons, forced = why_not_report(item, solution.prepared, solution.solution, config)
    return solved.single_plan.model_copy(update={"why_not": reasons, "why_not_plans": forced})


def why_not_report(
    item: str, prepared: Prepared, best: ir.Solution | None, config: ir.SolveConfig
) -> tuple[dict[str, list[str]], list[WhyNot]]:
    """The lines per workload, and the itemised plan behind each comparison: the line
    printed is `compared.summary` of the forced plan against the chosen one `best`."""
    from gpusolve.optimize.solve import solve

    cand, catalog = prepared.cand, prepared.catalog
    out = {w: rejection_lines(item, w, cand, catalog) for w in cand.instance.workloads}
    if best is None:
        return {w: found or [f"no rejection of {item} recorded"] for w, found in out.items()}, []
    chosen = {c.workload: c for c in best.choices}
    forced_plans: list[WhyNot] = []
    for w in cand.instance.workloads:
        lines = out[w]
        c = chosen.get(w)
        if c is not None and uses_item(item, cand.meta[c.option], c.site):
            lines.insert(0, f"{item} is in the chosen plan")
            out[w] = lines
            continue
        forced = forced_onto(cand.instance, w, item, cand.meta)
        if forced is None:
            out[w] = lines or [f"no candidate for {w} uses {item}"]
            continue
        alt = solve(forced, config)
        if alt.costs is None or alt.status not in ("optimal", "feasible"):
            lines.append(f"{w} on {item} admits no plan with the other workloads' needs")
        else:
            report = compare_forced(w, item, prepared, best, alt)
            forced_plans.append(report)
            lines.append(f"feasible with {w} on {item}: {report.compared.summary}")
        out[w] = lines
    return out, forced_plans


def compare_forced(
    workload: str, item: str, prepared: Prepared, best: ir.Solution, alt: ir.Solution
) -> WhyNot:
    """The plan with `workload` forced onto `item` (`alt`), against `best`."""
    cand, reqs, catalog = prepared.cand, prepared.reqs, prepared.catalog
    best_cost = parts.cost(best, cand, reqs, catalog)
    alt_cost = parts.cost(alt, cand, reqs, catalog)
    assert best_cost is not None and alt_cost is not None  # both are plans
    best_deps = parts.deployments(best, cand, reqs)
    alt_deps = parts.deployments(alt, cand, reqs)
    compared = compare(reqs.objective, best_cost, best_deps, alt_cost, alt_deps)
    return WhyNot(
        workload=workload, item=item, deployments=alt_deps, cost=alt_cost, compared=compared
    )


def rejection_lines(item: str, workload: str, cand: Candidates, catalog: Catalog) -> list[str]:
    """Why each of `workload`'s candidates involving `item` was rejected (two reasons)."""
    return [
        f"{r.candidate} rejected: {'; '.join(r.reasons[:2])}"
        for r in cand.rejections.get(workload, [])
        if involves(item, r.candidate, catalog)
    ]


def involves(item: str, candidate: str, catalog: Catalog) -> bool:
    if candidate == item:
        return True
    server = catalog.servers.get(candidate)
    cloud = catalog.cloud_offers.get(candidate)
    return (server is not None and server.card == item) or (
        cloud is not None and cloud.card == item
    )


def uses_item(item: str, meta: OptionMeta, site: str | None) -> bool:
    return item in (meta.card, meta.server, meta.cloud_offer, site)


def forced_onto(
    instance: ir.Instance, workload: str, item: str, meta: dict[str, OptionMeta]
) -> ir.Instance | None:
    """The instance with `workload` restricted to options that use `item`."""
    owned: list[ir.OwnedOption] = []
    for o in instance.owned:
        if o.workload != workload:
            owned.append(o)
            continue
        m = meta[o.key]
        if item in (m.card, m.server):
            owned.append(o)
        else:
            places = tuple(p for p in o.placements if p.site == item)
            if places:
                owned.append(replace(o, placements=places))
    cloud = [
        o
        for o in instance.cloud
        if o.workload != workload or item in (meta[o.key].card, meta[o.key].cloud_offer)
    ]
    if not any(o.workload == workload for o in owned) and not any(
        o.workload == workload for o in cloud
    ):
        return None
    scale = dict(throughput_scores_best(instance))
    return replace(instance, owned=tuple(owned), cloud=tuple(cloud), throughput_best=scale)


def throughput_scores_best(instance: ir.Instance) -> dict[str, int]:
    """Best throughput per workload over the whole instance: the forced instance scores
    max-throughput plans on the full instance's scale, so deltas compare like with like."""
    best: dict[str, int] = dict(instance.throughput_best)
    options: list[ir.OwnedOption | ir.CloudOption] = [*instance.owned, *instance.cloud]
    for o in options:
        best[o.workload] = max(best.get(o.workload, 0), o.throughput)
    return best


def hedged_why_not(
    item: str, hedged: Hedged, config: ir.SolveConfig
) -> tuple[dict[str, list[str]], list[WhyNot]]:
    """The lines per workload of a hedged plan, and the forced plans behind them in the
    scenario the plan shows."""
    where = hedged.where.prepared
    cand = where.cand
    out: dict[str, list[str]] = {}
    forced_plans: list[WhyNot] = []
    chosen = {c.workload: c for c in hedged.shown.choices}
    for w in cand.instance.workloads:
        lines = rejection_lines(item, w, cand, where.catalog)
        c = chosen.get(w)
        if c is not None and uses_item(item, cand.meta[c.option], c.site):
            out[w] = [f"{item} is in the chosen plan", *lines]
            continue
        elsewhere = _using(item, w, hedged)
        if elsewhere:
            out[w] = [f"{item} is in the hedged plan in scenario {', '.join(elsewhere)}", *lines]
            continue
        line, report = _forced_line(item, w, hedged, config)
        if line is None:
            out[w] = lines or [f"no candidate for {w} uses {item}"]
            continue
        out[w] = [*lines, line]
        if report is not None:
            forced_plans.append(report)
    return out, forced_plans


def _metas(hedged: Hedged) -> list[dict[str, OptionMeta]]:
    return [s.prepared.cand.meta for s in hedged.scenarios]


def _using(item: str, workload: str, hedged: Hedged) -> list[str]:
    """The scenarios whose hedged plan runs `workload` on `item`."""
    names = []
    for s, meta in zip(hedged.weighed, _metas(hedged), strict=True):
        outcome = hedged.result.outcomes.get(s.name)
        choices = outcome.choices if outcome is not None else ()
        if any(c.workload == workload and uses_item(item, meta[c.option], c.site) for c in choices):
            names.append(s.name)
    return names


def _forced_line(
    item: str, workload: str, hedged: Hedged, config: ir.SolveConfig
) -> tuple[str | None, WhyNot | None]:
    """The line comparing the plan with `workload` forced onto `item` (None when no
    scenario has a candidate for it there), and that plan against the plan shown in the
    scenario it shows."""
    from gpusolve.optimize.twostage import solve as twostage

    forced: list[twostage.Scenario] = []
    missing: list[str] = []
    for s, meta in zip(hedged.weighed, _metas(hedged), strict=True):
        instance = forced_onto(s.instance, workload, item, meta)
        if instance is None:
            missing.append(s.name)
        else:
            forced.append(replace(s, instance=instance))
    if len(missing) == len(hedged.weighed):
        return None, None
    if missing:  # every scenario must be met: no hedged plan runs it there
        return f"no candidate for {workload} uses {item} in scenario {', '.join(missing)}", None
    alt = twostage.solve_two_stage(forced, config, hedged.robust)
    if alt.first is None:
        return (
            f"{workload} on {item} admits no plan that meets every scenario with the other "
            "workloads' needs",
            None,
        )
    before = twostage.hedged_tco(hedged.result, hedged.weighed, hedged.robust, penalties=True)
    delta = twostage.hedged_tco(alt, forced, hedged.robust, penalties=True) - before
    where = hedged.where
    what = f"{hedged.robust} TCO + penalties"
    worded = change(what, delta, where.prepared.reqs.currency, ("dearer", "cheaper"))
    other = alt.outcomes.get(where.name)
    if other is None:  # the scenario shown is not one the hedge weighs
        return f"feasible with {workload} on {item}: {worded}", None
    report = compare_forced(workload, item, where.prepared, hedged.shown, other)
    line = f"feasible with {workload} on {item}: {worded}; in scenario {where.name}: "
    return line + report.compared.summary, report


# --------------------------------------------------------------------------- schedules


def _schedule_using(
    phased_inputs: PhasedInputs, item: str
) -> Callable[[int, str, str | None], bool]:
    def uses(p: int, key: str, site: str | None) -> bool:
        return uses_item(item, phased_inputs.prepared[p].cand.meta[key], site)

    return uses


def schedule_why_not(
    run: Inputs,
    phased_inputs: PhasedInputs,
    best: PhasedSolution,
    item: str,
    config: ir.SolveConfig,
) -> ScheduleWhyNot:
    """Whether the schedule uses `item`; if not, the schedule with it forced into some
    period and its delta, or why no period can use it."""
    from gpusolve.optimize.phased.alternatives import forced

    uses = _schedule_using(phased_inputs, item)
    used = [
        pp.period.index
        for pp in best.periods
        for c in pp.choices
        if uses(pp.period.index, c.option, c.site)
    ]
    if used:
        return ScheduleWhyNot(
            item=item, in_schedule=True, lines=[f"{item} is in the schedule (P{used[0]} on)"]
        )
    lines = _schedule_unavailable(run, item) + _schedule_rejections(phased_inputs, item)
    if best.objective_value is None:
        lines.append("no schedule exists to compare one using it with")
        return ScheduleWhyNot(item=item, in_schedule=False, lines=_schedule_unique(lines))
    alt = forced(phased_inputs.instance, uses, config)
    if alt is None:
        lines.append(f"no option of any period can use {item}")
        return ScheduleWhyNot(item=item, in_schedule=False, lines=_schedule_unique(lines))
    if alt.status not in ("optimal", "feasible"):
        lines.append(f"no schedule with {item} meets every period's workloads within the budgets")
        return ScheduleWhyNot(item=item, in_schedule=False, lines=_schedule_unique(lines))
    change_by = delta(alt.objective_value, best.objective_value)
    cur = run.reqs.currency
    worded = (
        f"{change_by:,} {cur} dearer"
        if change_by is not None and change_by >= 0
        else f"{-(change_by or 0):,} {cur} cheaper"
    )
    lines.append(
        f"feasible with {item} in the schedule: TCO {alt.tco:,} {cur}, {worded} in TCO + "
        f"penalties; {schedule_difference(best, alt)}"
    )
    return ScheduleWhyNot(
        item=item,
        in_schedule=False,
        lines=_schedule_unique(lines),
        tco=alt.tco,
        delta=change_by,
        bought=purchases_over(alt),
    )


def _schedule_unavailable(run: Inputs, item: str) -> list[str]:
    catalog = run.catalog
    month = 0
    if item in catalog.servers:
        month = first_month(catalog, item)
    elif item in catalog.cards:
        month = catalog.cards[item].available_from_month
    elif item in catalog.cloud_offers and catalog.cloud_offers[item].card in catalog.cards:
        month = catalog.cards[catalog.cloud_offers[item].card].available_from_month
    if month <= 0:
        return []
    if month >= run.reqs.horizon_months:
        return [f"{item} is not available within the horizon (from month {month})"]
    return [f"{item} is not available until month {month}"]


def _schedule_rejections(phased_inputs: PhasedInputs, item: str) -> list[str]:
    lines = []
    for p, prep in zip(phased_inputs.instance.periods, phased_inputs.prepared, strict=True):
        for w in prep.cand.instance.workloads:
            for line in rejection_lines(item, w, prep.cand, prep.catalog):
                lines.append(f"{w}: {line} (from P{p.index})")
    return lines


def _schedule_unique(lines: list[str]) -> list[str]:
    """Each reason once: a rejection repeated in later periods is said at its first."""
    seen: set[str] = set()
    out = []
    for line in lines:
        key = line.rsplit(" (from P", 1)[0]
        if key not in seen:
            seen.add(key)
            out.append(line)
    return out
