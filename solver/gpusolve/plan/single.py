"""Compose the pipeline for `gpusolve plan`: candidates -> optimise -> explain -> Plan.

Pure: typed values in, a typed Plan out. The CLI does the reading and the printing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpusolve.candidates.filters import beyond_horizon, rent_only, small_jobs
from gpusolve.candidates.generate import Candidates, build_candidates
from gpusolve.explain import parts as assemble
from gpusolve.explain.bom import bill_of_materials
from gpusolve.models.catalog import PART_KINDS, Catalog
from gpusolve.models.common import PriceNote
from gpusolve.models.plan import (
    Alternative,
    Infeasibility,
    Plan,
    SolverInfo,
    TimedOut,
)
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.rules.summary import RulesSummary as RulesSummary  # re-exported for pipeline

Progress = Callable[[str], None]

# H29: keep 20-30 % of each GPU's memory free; below the low end, out-of-memory under
# allocator fragmentation and several processes is likely (HEURISTICS.md H29).
H29_MIN_HEADROOM = 0.20


@dataclass(frozen=True)
class PlanOptions:
    config: ir.SolveConfig = field(default_factory=ir.SolveConfig)
    top_k: int = 0
    why_not: str | None = None
    timings: bool = False
    robust: str = "expected"  # with a scenarios: block: "expected" or "worst" TCO


def make_plan(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    rules: RulesSummary,
    options: PlanOptions,
    progress: Progress = lambda _: None,
) -> Plan:
    from gpusolve.optimize import interrupt
    from gpusolve.optimize.solve import solve  # ortools only on this path

    if reqs.scenarios:  # a two-stage plan over the scenarios (scenarioplan.py)
        from gpusolve.plan.twostage import ScenarioRun, make_scenario_plan

        run = ScenarioRun(options.robust, options.config, options.timings, options.why_not)
        return make_scenario_plan(reqs, catalog, policies, rules, run, progress)
    progress("building candidates")
    cand = build_candidates(reqs, catalog, policies)
    progress(
        f"{len(cand.instance.owned)} owned and {len(cand.instance.cloud)} cloud options "
        f"for {len(reqs.workloads)} workload(s)"
    )
    warnings = headroom_warnings(reqs, policies)
    small = small_jobs(reqs, catalog)
    if small:  # minutes of work: never buy servers for it
        cand = rent_only(cand, small)
        for message in small.values():
            progress(message)
    had_options = set(reqs_names(cand))
    cand = beyond_horizon(cand, reqs)
    missing = cand.workloads_without_options()
    too_long = [w for w in missing if w in had_options]
    if missing and set(missing) <= set(small):
        return _no_fit(reqs, rules, options, cand, small, _TOO_SMALL)
    if too_long:
        return _no_fit(reqs, rules, options, cand, small, _TOO_LONG)
    if missing:
        plan = _infeasible(reqs, catalog, policies, rules, options, cand, missing, progress)
        return plan.model_copy(update={"warnings": warnings})
    progress("solving")
    solution = solve(cand.instance, options.config)
    if not solution.choices and interrupt.requested():  # Ctrl-C before any plan: no explaining
        return Plan(
            status="unknown",
            objective=reqs.objective,
            cost=None,
            solver=SolverInfo(
                status="unknown", workers=options.config.workers, seed=options.config.seed
            ),
        )
    if solution.status == "model_invalid":
        raise RuntimeError("CP-SAT rejected the model as invalid: a gpusolve bug, please report")
    if solution.status == "infeasible":
        # Proven: only now is it worth looking for the requirements that conflict.
        plan = _infeasible(reqs, catalog, policies, rules, options, cand, [], progress)
        return plan.model_copy(update={"warnings": warnings})
    if not solution.choices:  # "unknown": the time ran out before any plan was found
        return _timed_out(reqs, rules, options, solution, warnings)
    from gpusolve.optimize.validate import assert_consistent

    assert_consistent(cand.instance, solution)  # cost recomputed outside the model
    plan = Plan(
        status="optimal" if solution.status == "optimal" else "feasible",
        objective=reqs.objective,
        cost=assemble.cost(solution, cand, reqs, catalog),
        deployments=assemble.deployments(solution, cand, reqs),
        sites=assemble.sites(solution, cand.instance, catalog),
        binding=assemble.binding(solution, cand.instance, catalog, reqs),
        rules_fired=rules.fired,
        advice=[*small.values(), *rules.advice],
        solver=_solver_info(solution, options).model_copy(update=cand.scope()),
        warnings=warnings,
    )
    plan = plan.model_copy(
        update={
            "illustrative_prices": illustrative_prices(plan, catalog),
            "bom": bill_of_materials(plan, catalog),
        }
    )
    if options.top_k:
        progress(f"finding {options.top_k} alternative plan(s)")
        plan = plan.model_copy(
            update={"alternatives": _alternatives(cand, solution, options, reqs, catalog)}
        )
    if options.why_not:
        from gpusolve.analyses.whynot import why_not_report

        progress(f"explaining why not {options.why_not}")
        reasons, forced = why_not_report(
            options.why_not, cand, solution, catalog, options.config, reqs
        )
        plan = plan.model_copy(update={"why_not": reasons, "why_not_plans": forced})
    return plan


def headroom_warnings(reqs: Requirements, policies: dict[str, WorkloadPolicy]) -> list[str]:
    """One warning per workload whose memory headroom is below H29's 20 %, saying who set it."""
    out: list[str] = []
    for w in reqs.workloads:
        policy = policies.get(w.name)
        if policy is None or policy.params.headroom >= H29_MIN_HEADROOM:
            continue
        origin = policy.param_origin("headroom")
        by = (
            "the workload's policy"
            if origin is None
            else "the requirements' `headroom:`"
            if origin == "user"
            else f"rule {origin}"
        )
        out.append(
            f"{w.name}: memory headroom {policy.params.headroom:.0%} (set by {by}) is below "
            f"H29's {H29_MIN_HEADROOM:.0%}: allocator fragmentation or a second process can "
            "run the GPUs out of memory; keep 20-30% unless this layout was measured"
        )
    return out


def illustrative_prices(plan: Plan, catalog: Catalog) -> list[str]:
    """The catalogue items the plan pays for whose price is illustrative, not a quote."""
    used: list[tuple[str, PriceNote | None]] = []
    for d in plan.deployments:
        if d.server is not None:
            server = catalog.servers.get(d.server)
            used.append((f"server {d.server}", server.pricing if server else None))
        if d.cloud_offer is not None:
            cloud = catalog.cloud_offers.get(d.cloud_offer)
            used.append((f"cloud {d.cloud_offer}", cloud.pricing if cloud else None))
    for s in plan.sites:
        colo = catalog.colo_offers.get(s.offer)
        used.append((f"colo {s.offer}", colo.pricing if colo else None))
    bought = plan.cost.breakdown.items if plan.cost is not None else []
    for line in bought:
        if line.kind in ("network", "storage") and line.amount:
            used.append((f"{line.kind} {line.subject}", _network_pricing(catalog, line.subject)))
    return [
        f"{what} (as of {note.as_of}; {note.source})"
        for what, note in dict(used).items()
        if note is not None and note.illustrative
    ]


def _network_pricing(catalog: Catalog, item_id: str) -> PriceNote | None:
    """The price note of a switch, link, NIC or storage node (None: not a catalogue item,
    such as NICs inside a server's price)."""
    for kind in PART_KINDS:
        item = getattr(catalog, kind).get(item_id)
        if item is not None:
            note: PriceNote = item.pricing
            return note
    return None


def _timed_out(
    reqs: Requirements,
    rules: RulesSummary,
    options: PlanOptions,
    solution: ir.Solution,
    warnings: list[str],
) -> Plan:
    """No plan within the time limit and no proof that none exists: say so, with the
    bound proven so far, instead of explaining a conflict that may not exist."""
    limit = options.config.time_limit_s
    maximise = reqs.objective == "max-throughput"
    what = _OBJECTIVE_WORDS.get(reqs.objective, reqs.objective)
    unit = "tokens/s" if maximise else reqs.currency
    bound_of = f"{what}, {unit} ({'an upper' if maximise else 'a lower'} bound)"
    reason = f"no plan found in {limit:g} s, and none proven impossible"
    bound = solution.best_bound
    if bound is not None and (maximise or bound > 0):
        relation = "at most" if maximise else "at least"
        reason += f"; the best bound proven: {what} is {relation} {bound:,} {unit}"
    else:
        reason += "; no bound beyond the trivial one was proven yet"
    reason += f"; try a longer --time-limit (e.g. {max(60.0, 10 * limit):g})"
    return Plan(
        status="timeout",
        objective=reqs.objective,
        cost=None,
        timed_out=TimedOut(
            reason=reason,
            time_limit_s=limit,
            best_bound=None if solution.best_bound is None else float(solution.best_bound),
            bound_of=bound_of,
        ),
        rules_fired=rules.fired,
        advice=rules.advice,
        warnings=warnings,
        solver=_solver_info(solution, options).model_copy(update={"status": "timeout"}),
    )


_OBJECTIVE_WORDS = {
    "min-tco": "total cost of ownership plus soft-rule penalties",
    "min-capex": "capex plus cloud rental plus soft-rule penalties",
    "min-monthly": "spend other than purchases over the horizon plus soft-rule penalties",
    "max-throughput": "total throughput",
}


def _solver_info(solution: ir.Solution, options: PlanOptions) -> SolverInfo:
    info = assemble.solver_info(solution, options.config)
    return info if options.timings else info.model_copy(update={"wall_s": None})


def _alternatives(
    cand: Candidates,
    solution: ir.Solution,
    options: PlanOptions,
    reqs: Requirements,
    catalog: Catalog,
) -> list[Alternative]:
    from gpusolve.optimize.alternatives import alternatives

    found = alternatives(cand.instance, options.top_k + 1, options.config)
    chosen_cost = assemble.cost(solution, cand, reqs, catalog)
    assert chosen_cost is not None  # only called with a plan
    chosen = (chosen_cost, assemble.deployments(solution, cand, reqs))
    return [
        assemble.alternative(
            rank,
            alt.solution,
            _difference(solution, alt.solution, cand),
            cand,
            reqs,
            catalog,
            chosen,
        )
        for rank, alt in enumerate(found[1:], 1)
    ]


def _difference(best: ir.Solution, alt: ir.Solution, cand: Candidates) -> str:
    mine = {c.workload: c for c in best.choices}
    parts = []
    for c in alt.choices:
        b = mine.get(c.workload)
        if b is None or (b.option, b.site) == (c.option, c.site):
            continue
        meta = cand.meta[c.option]
        what = meta.server or f"cloud {meta.cloud_offer}"
        parts.append(f"{c.workload} on {meta.nodes} x {what}" + (f" at {c.site}" if c.site else ""))
    return "; ".join(parts) or "same hardware, different packing"


def _infeasible(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    rules: RulesSummary,
    options: PlanOptions,
    cand: Candidates,
    missing: list[str],
    progress: Progress,
) -> Plan:
    from gpusolve.explain.infeasible import explain_infeasible

    progress("no feasible plan: looking for the requirements that conflict")
    infeasibility: Infeasibility = explain_infeasible(
        reqs, catalog, policies, cand, missing, options.config
    )
    reasons: dict[str, list[str]] = {}
    if options.why_not:
        from gpusolve.analyses.whynot import why_not

        reasons = why_not(options.why_not, cand, None, catalog, options.config)
    return Plan(
        status="infeasible",
        objective=reqs.objective,
        cost=None,
        infeasibility=infeasibility,
        why_not=reasons,
        rules_fired=rules.fired,
        advice=rules.advice,
        solver=SolverInfo(
            status="infeasible", workers=options.config.workers, seed=options.config.seed
        ),
    )


_TOO_SMALL = (
    "too small to buy hardware for, and no rental in the catalogue fits: "
    "use any GPU you have (or rent one by the hour)"
)
_TOO_LONG = (
    "the work does not fit in the planning horizon on any hardware: fewer tokens or runs, "
    "or a longer horizon_months"
)


def reqs_names(cand: Candidates) -> list[str]:
    """Workloads that have at least one option."""
    missing = set(cand.workloads_without_options())
    return [w for w in cand.instance.workloads if w not in missing]


def _no_fit(
    reqs: Requirements,
    rules: RulesSummary,
    options: PlanOptions,
    cand: Candidates,
    small: dict[str, str],
    reason: str,
) -> Plan:
    """Workloads lack options because of their size, not a requirement that could be
    relaxed: say so plainly instead of searching for requirements to relax."""
    from gpusolve.explain.infeasible import summarise

    missing = cand.workloads_without_options()
    return Plan(
        status="infeasible",
        objective=reqs.objective,
        cost=None,
        infeasibility=Infeasibility(
            reason=reason,
            workloads_without_candidates={
                w: [*([small[w]] if w in small else []), *summarise(cand.rejections.get(w, []))]
                for w in missing
            },
        ),
        rules_fired=rules.fired,
        advice=[*small.values(), *rules.advice],
        solver=SolverInfo(
            status="infeasible", workers=options.config.workers, seed=options.config.seed
        ),
    )
