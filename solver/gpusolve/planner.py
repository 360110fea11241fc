"""Compose the pipeline for `gpusolve plan`: candidates -> optimise -> explain -> Plan.

Pure: typed values in, a typed Plan out. The CLI does the reading and the printing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpusolve import assemble
from gpusolve.candidates.generate import Candidates, build_candidates
from gpusolve.candidates.policy import WorkloadPolicy
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Alternative, Infeasibility, Plan, RuleFired, SolverInfo
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PlanOptions:
    config: ir.SolveConfig = field(default_factory=ir.SolveConfig)
    top_k: int = 0
    why_not: str | None = None
    timings: bool = False


@dataclass(frozen=True)
class RulesSummary:
    fired: list[RuleFired]
    advice: list[str]


def make_plan(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    rules: RulesSummary,
    options: PlanOptions,
    progress: Progress = lambda _: None,
) -> Plan:
    from gpusolve.optimize.solve import solve  # ortools only on this path

    progress("building candidates")
    cand = build_candidates(reqs, catalog, policies)
    progress(
        f"{len(cand.instance.owned)} owned and {len(cand.instance.cloud)} cloud options "
        f"for {len(reqs.workloads)} workload(s)"
    )
    missing = cand.workloads_without_options()
    if missing:
        return _infeasible(reqs, catalog, policies, rules, options, cand, missing, progress)
    progress("solving")
    solution = solve(cand.instance, options.config)
    if solution.status in ("infeasible", "model_invalid") or not solution.choices:
        return _infeasible(reqs, catalog, policies, rules, options, cand, [], progress)
    plan = Plan(
        status="optimal" if solution.status == "optimal" else "feasible",
        objective=reqs.objective,
        cost=assemble.cost(solution, reqs),
        deployments=assemble.deployments(solution, cand, reqs),
        sites=assemble.sites(solution, cand.instance, catalog),
        binding=assemble.binding(solution, cand.instance, catalog, reqs),
        rules_fired=rules.fired,
        advice=rules.advice,
        solver=_solver_info(solution, options).model_copy(update=cand.scope()),
    )
    if options.top_k:
        progress(f"finding {options.top_k} alternative plan(s)")
        plan = plan.model_copy(
            update={"alternatives": _alternatives(cand, solution, options, reqs, catalog)}
        )
    if options.why_not:
        from gpusolve.whynot import why_not

        progress(f"explaining why not {options.why_not}")
        plan = plan.model_copy(
            update={"why_not": why_not(options.why_not, cand, solution, catalog, options.config)}
        )
    return plan


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
    return [
        Alternative(
            rank=rank,
            tco=float(alt.solution.costs.tco if alt.solution.costs else 0),
            delta=float(alt.cost_delta),
            differs=_difference(solution, alt.solution, cand),
            deployments=assemble.deployments(alt.solution, cand, reqs),
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
    from gpusolve.explain import explain_infeasible

    progress("no feasible plan: looking for the requirements that conflict")
    infeasibility: Infeasibility = explain_infeasible(
        reqs, catalog, policies, cand, missing, options.config
    )
    reasons: dict[str, list[str]] = {}
    if options.why_not:
        from gpusolve.whynot import why_not

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
