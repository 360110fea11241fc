"""The plan of one instance: prepare the candidates, solve, and read the outcome out.

Every outcome is a `Solved`: a plan (proven optimal, or feasible with its gap), a proof
that none exists (with the requirements that conflict, `explain/infeasible.py`), work that
no hardware size can take (too small to buy for and nothing to rent, or too long for the
horizon: said plainly, nothing to relax), or no answer in time (with the bound proven).
"""

from __future__ import annotations

from collections.abc import Callable

from gpusolve.candidates.prepare import Prepared, prepare
from gpusolve.explain import infeasible
from gpusolve.models.plan import Infeasibility, Plan, TimedOut
from gpusolve.optimize import ir
from gpusolve.plan.assemble import headroom_warnings, no_plan_info, planned, solver_info
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.solved import PlanOptions, Single, Solved

Progress = Callable[[str], None]


def solve_single(run: Inputs, options: PlanOptions, progress: Progress) -> Solved:
    from gpusolve.optimize import interrupt
    from gpusolve.optimize.solve import solve  # ortools only on this path

    reqs = run.reqs
    progress("building candidates")
    prepared = prepare(reqs, run.catalog, run.policies)
    cand = prepared.cand
    progress(
        f"{len(cand.instance.owned)} owned and {len(cand.instance.cloud)} cloud options "
        f"for {len(reqs.workloads)} workload(s)"
    )
    for message in prepared.small.values():
        progress(message)
    missing = cand.workloads_without_options()
    if missing and set(missing) <= set(prepared.small):
        return Solved(run, options, _no_fit(run, options, prepared, _TOO_SMALL))
    if prepared.too_long:
        return Solved(run, options, _no_fit(run, options, prepared, _TOO_LONG))
    if missing:
        return _infeasible(run, options, prepared, missing, progress)
    progress("solving")
    solution = solve(cand.instance, options.config)
    if not solution.choices and interrupt.requested():  # Ctrl-C before any plan: no explaining
        info = no_plan_info(options.config, "unknown")
        plan = Plan(status="unknown", objective=reqs.objective, cost=None, solver=info)
        return Solved(run, options, plan)
    if solution.status == "model_invalid":
        raise RuntimeError("CP-SAT rejected the model as invalid: a gpusolve bug, please report")
    if solution.status == "infeasible":
        # Proven: only now is it worth looking for the requirements that conflict.
        return _infeasible(run, options, prepared, [], progress)
    if not solution.choices:  # "unknown": the time ran out before any plan was found
        return Solved(run, options, _timed_out(run, options, solution))
    from gpusolve.optimize.validate import assert_consistent

    assert_consistent(cand.instance, solution)  # cost recomputed outside the model
    info = solver_info(solution, options.config, options.timings)
    plan = planned(
        run,
        prepared,
        solution,
        objective=reqs.objective,
        solver=info.model_copy(update=cand.scope()),
    )
    if solution.fallback is not None:
        warning = fallback_warning(solution.fallback)
        plan = plan.model_copy(update={"warnings": [*plan.warnings, warning]})
    return Solved(run, options, plan, Single(prepared, solution))


_FALLBACKS = {
    "all-rent": "every workload on its cheapest rental",
    "greedy": "each workload on its standalone-cheapest option",
    "restricted": "the best over each workload's few cheapest options and every rental",
}


def fallback_warning(kind: str) -> str:
    """What a plan that is the fallback says: which one, and that more time may find a
    cheaper one."""
    return (
        f"the search stopped at its limit without a better plan than the fallback: this "
        f"is the {kind} plan ({_FALLBACKS.get(kind, kind)}), checked against every "
        "requirement; the gap is to the bound proven so far; a longer --work-limit (or "
        "--time-limit) may find a cheaper one"
    )


def _timed_out(run: Inputs, options: PlanOptions, solution: ir.Solution) -> Plan:
    """No plan within the time limit and no proof that none exists: say so, with the
    bound proven so far, instead of explaining a conflict that may not exist."""
    reqs = run.reqs
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
    info = solver_info(solution, options.config, options.timings)
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
        rules_fired=run.rules.fired,
        advice=run.rules.advice,
        warnings=headroom_warnings(reqs, run.policies),
        solver=info.model_copy(update={"status": "timeout"}),
    )


_OBJECTIVE_WORDS = {
    "min-tco": "total cost of ownership plus soft-rule penalties",
    "min-capex": "capex plus cloud rental plus soft-rule penalties",
    "min-monthly": "spend other than purchases over the horizon plus soft-rule penalties",
    "max-throughput": "total throughput",
}


def _infeasible(
    run: Inputs, options: PlanOptions, prepared: Prepared, missing: list[str], progress: Progress
) -> Solved:
    progress("no feasible plan: looking for the requirements that conflict")
    infeasibility: Infeasibility = infeasible.explain_infeasible(
        run.reqs, run.catalog, run.policies, prepared.cand, missing, options.config
    )
    plan = Plan(
        status="infeasible",
        objective=run.reqs.objective,
        cost=None,
        infeasibility=infeasibility,
        rules_fired=run.rules.fired,
        advice=run.rules.advice,
        solver=no_plan_info(options.config, "infeasible"),
        warnings=headroom_warnings(run.reqs, run.policies),
    )
    return Solved(run, options, plan, Single(prepared, None))


_TOO_SMALL = (
    "too small to buy hardware for, and no rental in the catalogue fits: "
    "use any GPU you have (or rent one by the hour)"
)
_TOO_LONG = (
    "the work does not fit in the planning horizon on any hardware: fewer tokens or runs, "
    "or a longer horizon_months"
)


def _no_fit(run: Inputs, options: PlanOptions, prepared: Prepared, reason: str) -> Plan:
    """Workloads lack options because of their size, not a requirement that could be
    relaxed: say so plainly instead of searching for requirements to relax."""
    small = prepared.small
    missing = prepared.cand.workloads_without_options()
    rejections = prepared.cand.rejections
    return Plan(
        status="infeasible",
        objective=run.reqs.objective,
        cost=None,
        infeasibility=Infeasibility(
            reason=reason,
            workloads_without_candidates={
                w: [
                    *([small[w]] if w in small else []),
                    *infeasible.summarise(rejections.get(w, [])),
                ]
                for w in missing
            },
        ),
        rules_fired=run.rules.fired,
        advice=[*small.values(), *run.rules.advice],
        solver=no_plan_info(options.config, "infeasible"),
    )
