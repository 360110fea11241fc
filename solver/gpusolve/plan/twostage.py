"""`plan` with a `scenarios:` block: the two-stage plan against the nominal one.

Each scenario is the requirements and the catalogue with its changes applied (demand,
efficiency, prices, cards unavailable), run through the ordinary candidates stage into its
own `ir.Instance`; `optimize/twostage/` then decides one purchase for all of them. The
nominal plan (the scenario named `nominal`, else the requirements as written) is solved
alone, as `plan` would, and its purchase is evaluated in every scenario with the rentals
re-chosen there; so is the hedged plan's. The plan printed is the hedged plan as it runs
in the nominal scenario; `Plan.scenarios` compares the two.

Rules are evaluated once, on the requirements as written: what they decide (sharding,
headroom, the layouts allowed) does not depend on the figures a scenario changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gpusolve.candidates.prepare import Prepared, prepare
from gpusolve.candidates.pricing import fabric_classes, price_site, price_sku
from gpusolve.candidates.records import Candidates
from gpusolve.candidates.scaling import scenario_catalog
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import (
    Infeasibility,
    Plan,
    ScenarioOutcome,
    Scenarios,
    TimedOut,
)
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import (
    SCENARIO_ALL,
    InferenceWorkload,
    Requirements,
    Scenario,
    Workload,
)
from gpusolve.optimize import ir
from gpusolve.plan.assemble import no_plan_info, planned, solver_info
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.solved import Hedged, PlanOptions, ScenarioCandidates, Solved

if TYPE_CHECKING:
    from gpusolve.optimize.twostage import solve as twostage

Progress = Callable[[str], None]
NOMINAL = "nominal"


# --------------------------------------------------------------------------- scenario


def scenario_requirements(reqs: Requirements, s: Scenario) -> Requirements:
    """The requirements with the scenario's demand: tokens per run for training,
    target tokens/s (or concurrency) for serving."""
    workloads = [_grown(w, _demand_factor(s, w.name)) for w in reqs.workloads]
    return reqs.model_copy(update={"workloads": workloads, "scenarios": None})


def _demand_factor(s: Scenario, workload: str) -> float:
    if isinstance(s.demand, dict):
        return s.demand.get(workload, s.demand.get(SCENARIO_ALL, 1.0))
    return s.demand


def _grown(w: Workload, factor: float) -> Workload:
    if factor == 1.0:
        return w
    if not isinstance(w, InferenceWorkload):
        return w.model_copy(update={"tokens": w.tokens_per_run * factor})
    return w.model_copy(update=w.demand_scaled(factor))


def prepare_all(
    reqs: Requirements, catalog: Catalog, policies: dict[str, WorkloadPolicy]
) -> list[ScenarioCandidates]:
    """Every declared scenario prepared (`candidates.prepare`, as `plan` prepares its one
    instance), then the nominal one when none is declared by that name (probability 0:
    compared against, never weighed), harmonised."""
    prepared = [
        ScenarioCandidates(name, probability, prepare(own_reqs, own_catalog, policies))
        for name, probability, own_reqs, own_catalog in scenario_inputs(reqs, catalog)
    ]
    return harmonise(prepared)


def scenario_inputs(
    reqs: Requirements, catalog: Catalog
) -> list[tuple[str, float, Requirements, Catalog]]:
    """Each scenario's name, probability, requirements and catalogue, in the order the
    plan weighs them: the declared ones, then the nominal one when none is declared by
    that name (probability 0). A Ray worker rebuilds a hedged plan's inputs from them."""
    declared = reqs.scenarios or []
    out = [
        (s.name, s.probability, scenario_requirements(reqs, s), scenario_catalog(catalog, s))
        for s in declared
    ]
    if not any(s.name == NOMINAL for s in declared):
        out.append((NOMINAL, 0.0, reqs.model_copy(update={"scenarios": None}), catalog))
    return out


def weighed(prepared: Sequence[ScenarioCandidates]) -> tuple[twostage.Scenario, ...]:
    """The scenarios as the two-stage model weighs them."""
    from gpusolve.optimize.twostage import solve as twostage

    return tuple(
        twostage.Scenario(p.name, p.probability, p.prepared.cand.instance) for p in prepared
    )


def harmonise(prepared: list[ScenarioCandidates]) -> list[ScenarioCandidates]:
    """Every scenario's instance prices every site any scenario uses and every SKU any
    scenario uses that it can buy: the shared purchase is priced in each scenario. A
    scenario's own items are kept as its candidates stage built them; an item only another
    scenario uses takes that scenario's physical figures (racks, reserves, bandwidth) and
    this scenario's prices."""
    instances = [p.prepared.cand.instance for p in prepared]
    site_from = {k: v for inst in reversed(instances) for k, v in inst.sites.items()}
    sku_from = {k: v for inst in reversed(instances) for k, v in inst.skus.items()}
    out: list[ScenarioCandidates] = []
    for s in prepared:
        p = s.prepared
        inst = p.cand.instance
        sites = {i: inst.sites.get(i) or _site(p, other) for i, other in site_from.items()}
        skus = {i: inst.skus.get(i) or _sku(p, i) for i in sku_from if i in p.catalog.servers}
        added = [p.catalog.servers[i] for i in skus if i not in inst.skus]
        # The fabrics the added SKUs' NICs join, priced here like the SKUs themselves.
        fabrics = {**fabric_classes(p.catalog, added, p.reqs), **inst.fabrics}
        instance = dataclasses.replace(inst, sites=sites, skus=skus, fabrics=fabrics)
        cand = dataclasses.replace(p.cand, instance=instance)
        out.append(dataclasses.replace(s, prepared=dataclasses.replace(p, cand=cand)))
    return out


def _sku(p: Prepared, sku_id: str) -> ir.Sku:
    return price_sku(p.catalog.servers[sku_id], p.reqs, p.catalog, p.cand.finance_terms)


def _site(p: Prepared, other: ir.Site) -> ir.Site:
    # Priced on this scenario's catalogue and requirements as the candidates stage prices
    # it, with the room its rack reserve leaves as the scenario that uses it built it.
    offer = p.catalog.colo_offers[other.id]
    priced = price_site(
        offer, p.catalog, p.reqs, terms=p.cand.finance_terms, rack_servers=other.rack_servers
    )
    return dataclasses.replace(priced, rack_w=other.rack_w, rack_units=other.rack_units)


# --------------------------------------------------------------------------- plan


def solve_hedged(run: Inputs, options: PlanOptions, progress: Progress) -> Solved:
    """The hedged plan for every scenario, compared with the nominal plan."""
    from gpusolve.optimize.solve import solve
    from gpusolve.optimize.twostage import solve as twostage

    reqs, config = run.reqs, options.config
    declared = reqs.scenarios or []
    robust = _robust(options)
    objective = f"two-stage {robust} TCO"
    progress(f"building candidates for {len(declared)} scenario(s)")
    prepared = prepare_all(reqs, run.catalog, run.policies)
    nominal = next(p for p in prepared if p.name == NOMINAL)
    lacking = {p.name: p.prepared.cand.workloads_without_options() for p in prepared}
    lacking = {k: v for k, v in lacking.items() if v}
    if lacking:
        return Solved(run, options, _infeasible(run, options, _lacking_reason(lacking)))
    mine = [p for p in prepared if p.name in declared_names(reqs)]
    scenarios = weighed(mine)
    everywhere = weighed(prepared)

    progress("solving the nominal plan")
    nominal_solution = solve(nominal.prepared.cand.instance, config)
    nominal_first = (
        twostage.FirstStage(nominal_solution.servers) if nominal_solution.choices else None
    )
    nominal_eval = twostage.evaluate(nominal_first, everywhere, config) if nominal_first else {}
    hint = None
    if nominal_first and all(nominal_eval.get(s.name) for s in scenarios):
        hint = twostage.TwoStageResult(
            "feasible",
            nominal_first,
            {k: v for k, v in nominal_eval.items() if v is not None},
        )
    progress(f"solving the two-stage plan over {len(scenarios)} scenario(s) ({options.robust})")
    hedged = twostage.solve_two_stage(
        scenarios, config, robust, start_from=nominal_first if hint else None
    )
    if hedged.first is None:
        if hedged.status == "infeasible":
            return Solved(run, options, _infeasible(run, options, _NO_PURCHASE))
        return Solved(run, options, _timed_out(run, options, robust))
    hedged_eval = twostage.evaluate(hedged.first, everywhere, config)
    comparison = _compare(robust, prepared, declared_names(reqs), hedged_eval, nominal_eval)
    shown = hedged_eval.get(NOMINAL)
    where = nominal
    if shown is None:  # the hedged purchase cannot meet the requirements as written
        where = max(mine, key=lambda p: p.probability)
        shown = hedged_eval[where.name]
    assert shown is not None
    shown = dataclasses.replace(
        shown,
        status=hedged.status,
        objective_value=hedged.objective_value,
        best_bound=hedged.best_bound,
        wall_s=hedged.wall_s,
    )
    info = solver_info(shown, config, options.timings)
    info = info.model_copy(update=where.prepared.cand.scope())
    if robust == "expected":  # the model weighs each scenario by probability x SCALE
        scale = twostage.PROBABILITY_SCALE
        info = info.model_copy(
            update={
                "objective_value": _per_unit(info.objective_value, scale),
                "best_bound": _per_unit(info.best_bound, scale),
            }
        )
    plan = planned(
        run, where.prepared, shown, objective=objective, solver=info, scenarios=comparison
    )
    solution = Hedged(tuple(mine), scenarios, hedged, robust, where, shown)
    return Solved(run, options, plan, solution)


def _robust(options: PlanOptions) -> twostage.Robust:
    return "worst" if options.robust == "worst" else "expected"


_NO_PURCHASE = (
    "no single purchase meets every scenario: relax the hardest scenario "
    "(its demand or its unavailable cards) or drop it"
)


def _timed_out(run: Inputs, options: PlanOptions, robust: str) -> Plan:
    limit = options.config.time_limit_s
    timed_out = TimedOut(
        reason=f"no two-stage plan found in {limit:g} s, and none proven impossible; "
        f"try a longer --time-limit (e.g. {max(60.0, 10 * limit):g})",
        time_limit_s=limit,
        bound_of=f"{robust} TCO plus soft-rule penalties",
    )
    config = options.config
    return Plan(
        status="timeout",
        objective=f"two-stage {robust} TCO",
        cost=None,
        timed_out=timed_out,
        rules_fired=run.rules.fired,
        advice=run.rules.advice,
        solver=no_plan_info(config, "timeout"),
    )


def _per_unit(value: float | None, scale: int) -> float | None:
    return None if value is None else round(value / scale, 2)


def declared_names(reqs: Requirements) -> set[str]:
    return {s.name for s in reqs.scenarios or []}


def _compare(
    robust: str,
    prepared: list[ScenarioCandidates],
    declared: set[str],
    hedged: dict[str, ir.Solution | None],
    nominal: dict[str, ir.Solution | None],
) -> Scenarios:
    outcomes: list[ScenarioOutcome] = []
    for p in prepared:
        if p.name not in declared:
            continue
        mine = hedged[p.name]
        theirs = nominal.get(p.name)
        assert mine is not None and mine.costs is not None  # the hedged plan meets them all
        outcomes.append(
            ScenarioOutcome(
                name=p.name,
                probability=p.probability,
                tco=float(mine.costs.tco),
                nominal_tco=None
                if theirs is None or theirs.costs is None
                else float(theirs.costs.tco),
                rented=_rented(mine, p.prepared.cand),
            )
        )
    tco = _aggregate(robust, [(o.probability, o.tco) for o in outcomes])
    nominal_figures = [(o.probability, o.nominal_tco) for o in outcomes]
    nominal_tco = (
        None
        if any(v is None for _, v in nominal_figures)
        else _aggregate(robust, [(p, v) for p, v in nominal_figures if v is not None])
    )
    mine_nominal = hedged.get(NOMINAL)
    theirs_nominal = nominal.get(NOMINAL)
    hedge_cost = None
    if mine_nominal and theirs_nominal and mine_nominal.costs and theirs_nominal.costs:
        hedge_cost = float(mine_nominal.costs.tco - theirs_nominal.costs.tco)
    return Scenarios(
        robust="worst" if robust == "worst" else "expected",
        tco=tco,
        nominal_tco=nominal_tco,
        hedge_cost=hedge_cost,
        outcomes=outcomes,
    )


def _aggregate(robust: str, figures: list[tuple[float, float]]) -> float:
    if robust == "worst":
        return max(v for _, v in figures)
    return round(sum(p * v for p, v in figures), 2)


def _rented(solution: ir.Solution, cand: Candidates) -> list[str]:
    out: list[str] = []
    for c in solution.choices:
        if c.site is None:
            meta = cand.meta[c.option]
            out.append(f"{c.workload}: {meta.nodes} x {meta.cloud_offer}")
    return out


def _lacking_reason(lacking: dict[str, list[str]]) -> str:
    parts = [f"scenario {name}: {', '.join(ws)}" for name, ws in sorted(lacking.items())]
    return (
        "some workloads have no hardware or rental that meets them in a scenario ("
        + "; ".join(parts)
        + "): change that scenario, or run `gpusolve plan` on its requirements to see why"
    )


def _infeasible(run: Inputs, options: PlanOptions, reason: str) -> Plan:
    robust = _robust(options)
    config = options.config
    return Plan(
        rules_fired=run.rules.fired,
        advice=run.rules.advice,
        status="infeasible",
        objective=f"two-stage {robust} TCO",
        cost=None,
        infeasibility=Infeasibility(reason=reason),
        solver=no_plan_info(config, "infeasible"),
    )
