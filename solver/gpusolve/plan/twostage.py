"""`plan` with a `scenarios:` block: the two-stage plan against the nominal one.

Each scenario is the requirements and the catalogue with its changes applied (demand,
efficiency, prices, cards unavailable), run through the ordinary candidates stage into its
own `ir.Instance`; `optimize/scenarios.py` then decides one purchase for all of them. The
nominal plan (the scenario named `nominal`, else the requirements as written) is solved
alone, as `plan` would, and its purchase is evaluated in every scenario with the rentals
re-chosen there; so is the hedged plan's. The plan printed is the hedged plan as it runs
in the nominal scenario; `Plan.scenarios` compares the two.

Rules are evaluated once, on the requirements as written: what they decide (sharding,
headroom, the layouts allowed) does not depend on the figures a scenario changes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from gpusolve.candidates.filters import beyond_horizon, rent_only, small_jobs
from gpusolve.candidates.generate import (
    Candidates,
    build_candidates,
    fabric_classes,
    price_site,
    price_sku,
)
from gpusolve.errors import Problem
from gpusolve.explain import parts as assemble
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Card, Catalog
from gpusolve.models.plan import (
    Infeasibility,
    Plan,
    ScenarioOutcome,
    Scenarios,
    SolverInfo,
    TimedOut,
)
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import InferenceWorkload, Requirements, Scenario, Workload
from gpusolve.optimize import ir

if TYPE_CHECKING:
    from gpusolve.optimize import scenarios as two
    from gpusolve.rules.summary import RulesSummary

Progress = Callable[[str], None]
NOMINAL = "nominal"
ALL_CARDS = "all"


# --------------------------------------------------------------------------- checks


def scenario_problems(reqs: Requirements, catalog: Catalog, doc: Document) -> list[Problem]:
    """Card ids and workload names in the scenarios that the run does not know."""
    problems: list[Problem] = []
    cards = set(catalog.cards)
    workloads = {w.name for w in reqs.workloads}

    def problem(path: tuple[str | int, ...], what: str, hint: str) -> None:
        loc = doc.locate(path) or (None, None)
        problems.append(Problem(doc.name, loc[0], loc[1], what, hint))

    card_hint = "use a card id from `gpusolve catalog list --kind cards`"
    for i, s in enumerate(reqs.scenarios or []):
        base: tuple[str | int, ...] = ("scenarios", i)
        for card in s.efficiency:
            if card != ALL_CARDS and card not in cards:
                problem((*base, "efficiency", card), f"unknown card {card!r}", card_hint)
        for j, card in enumerate(s.unavailable):
            if card not in cards:
                problem((*base, "unavailable", j), f"unknown card {card!r}", card_hint)
        if isinstance(s.demand, dict):
            for name in s.demand:
                if name != ALL_CARDS and name not in workloads:
                    hint = f"use a workload name: {', '.join(sorted(workloads))}, or all"
                    problem((*base, "demand", name), f"unknown workload {name!r}", hint)
    return problems


# --------------------------------------------------------------------------- scenario


def scenario_requirements(reqs: Requirements, s: Scenario) -> Requirements:
    """The requirements with the scenario's demand: tokens per run for training,
    target tokens/s (or concurrency) for serving."""
    workloads = [_grown(w, _demand_factor(s, w.name)) for w in reqs.workloads]
    return reqs.model_copy(update={"workloads": workloads, "scenarios": None})


def _demand_factor(s: Scenario, workload: str) -> float:
    if isinstance(s.demand, dict):
        return s.demand.get(workload, s.demand.get(ALL_CARDS, 1.0))
    return s.demand


def _grown(w: Workload, factor: float) -> Workload:
    if factor == 1.0:
        return w
    if not isinstance(w, InferenceWorkload):
        return w.model_copy(update={"tokens": w.tokens_per_run * factor})
    if w.target_tokens_per_s is not None:
        return w.model_copy(update={"target_tokens_per_s": w.target_tokens_per_s * factor})
    assert w.concurrency is not None  # the model requires one of the two
    return w.model_copy(update={"concurrency": max(1, math.ceil(w.concurrency * factor))})


def scenario_catalog(catalog: Catalog, s: Scenario) -> Catalog:
    """The catalogue as the scenario has it: cards' achieved rates, prices, and no
    server or cloud offer of an unavailable card."""
    gone = set(s.unavailable)
    cards = {
        k: _efficient(c, s.efficiency.get(k, s.efficiency.get(ALL_CARDS, 1.0)))
        for k, c in catalog.cards.items()
    }
    servers = {
        k: v.model_copy(update={"price": v.price * s.prices.servers})
        for k, v in catalog.servers.items()
        if v.card not in gone
    }
    cloud = {
        k: v.model_copy(update={"price_per_hour": v.price_per_hour * s.prices.cloud})
        for k, v in catalog.cloud_offers.items()
        if v.card not in gone
    }
    colo = {
        k: v.model_copy(update={"power_price_per_kwh": v.power_price_per_kwh * s.prices.power})
        for k, v in catalog.colo_offers.items()
    }
    return catalog.model_copy(
        update={"cards": cards, "servers": servers, "cloud_offers": cloud, "colo_offers": colo}
    )


def _efficient(card: Card, factor: float) -> Card:
    """A card that achieves `factor` x what the model assumes on its kernels, scaled as
    the sensitivity analysis scales it (one meaning of "efficiency" for both)."""
    from gpusolve.analyses.sensitivity import scale_card

    return card if factor == 1.0 else scale_card(card, factor)


@dataclasses.dataclass(frozen=True)
class Prepared:
    """One scenario ready to optimise: its requirements, catalogue and candidates."""

    name: str
    probability: float
    reqs: Requirements
    catalog: Catalog
    cand: Candidates
    small: dict[str, str]


def prepare(
    name: str,
    probability: float,
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
) -> Prepared:
    """The candidates stage on one scenario, with `plan`'s own pre-solve filters."""
    cand = build_candidates(reqs, catalog, policies)
    small = small_jobs(reqs, catalog)
    if small:
        cand = rent_only(cand, small)
    cand = beyond_horizon(cand, reqs)
    return Prepared(name, probability, reqs, catalog, cand, small)


def prepare_all(
    reqs: Requirements, catalog: Catalog, policies: dict[str, WorkloadPolicy]
) -> list[Prepared]:
    """Every declared scenario prepared, then the nominal one when none is declared by that
    name (probability 0: compared against, never weighed), harmonised."""
    declared = reqs.scenarios or []
    prepared = [
        prepare(
            s.name,
            s.probability,
            scenario_requirements(reqs, s),
            scenario_catalog(catalog, s),
            policies,
        )
        for s in declared
    ]
    if not any(s.name == NOMINAL for s in declared):
        bare = reqs.model_copy(update={"scenarios": None})
        prepared.append(prepare(NOMINAL, 0.0, bare, catalog, policies))
    return harmonise(prepared)


def prepare_weighed(
    reqs: Requirements, catalog: Catalog, policies: dict[str, WorkloadPolicy]
) -> tuple[list[Prepared], tuple[two.Scenario, ...]]:
    """The declared scenarios prepared (`prepare_all`), and as the two-stage model weighs
    them (the analyses of a hedged plan re-solve it from these)."""
    from gpusolve.optimize import scenarios as two

    names = declared_names(reqs)
    prepared = [p for p in prepare_all(reqs, catalog, policies) if p.name in names]
    return prepared, tuple(two.Scenario(p.name, p.probability, p.cand.instance) for p in prepared)


def harmonise(prepared: list[Prepared]) -> list[Prepared]:
    """Every scenario's instance prices every site any scenario uses and every SKU any
    scenario uses that it can buy: the shared purchase is priced in each scenario. A
    scenario's own items are kept as its candidates stage built them; an item only another
    scenario uses takes that scenario's physical figures (racks, reserves, bandwidth) and
    this scenario's prices."""
    site_from = {k: v for p in reversed(prepared) for k, v in p.cand.instance.sites.items()}
    sku_from = {k: v for p in reversed(prepared) for k, v in p.cand.instance.skus.items()}
    out: list[Prepared] = []
    for p in prepared:
        inst = p.cand.instance
        sites = {i: inst.sites.get(i) or _site(p, other) for i, other in site_from.items()}
        skus = {i: inst.skus.get(i) or _sku(p, i) for i in sku_from if i in p.catalog.servers}
        added = [p.catalog.servers[i] for i in skus if i not in inst.skus]
        # The fabrics the added SKUs' NICs join, priced here like the SKUs themselves.
        fabrics = {**fabric_classes(p.catalog, added, p.reqs), **inst.fabrics}
        instance = dataclasses.replace(inst, sites=sites, skus=skus, fabrics=fabrics)
        out.append(dataclasses.replace(p, cand=dataclasses.replace(p.cand, instance=instance)))
    return out


def _sku(p: Prepared, sku_id: str) -> ir.Sku:
    return price_sku(p.catalog.servers[sku_id], p.reqs, p.catalog, p.cand.finance_terms)


def _site(p: Prepared, other: ir.Site) -> ir.Site:
    # Priced on this scenario's catalogue and requirements as the candidates stage prices
    # it, with the room its rack reserve leaves as the scenario that uses it built it.
    offer = p.catalog.colo_offers[other.id]
    priced = price_site(offer, p.catalog, p.reqs, terms=p.cand.finance_terms)
    return dataclasses.replace(priced, rack_w=other.rack_w, rack_units=other.rack_units)


# --------------------------------------------------------------------------- plan


@dataclasses.dataclass(frozen=True)
class ScenarioRun:
    robust: str
    config: ir.SolveConfig
    timings: bool = False
    why_not: str | None = None  # `--why-not ID` (`scenario_whynot.py`)


def make_scenario_plan(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    rules: RulesSummary,
    run: ScenarioRun,
    progress: Progress,
) -> Plan:
    """The hedged plan for every scenario, compared with the nominal plan."""
    from gpusolve.optimize import scenarios as two
    from gpusolve.optimize.solve import solve

    declared = reqs.scenarios or []
    progress(f"building candidates for {len(declared)} scenario(s)")
    prepared = prepare_all(reqs, catalog, policies)
    nominal = next(p for p in prepared if p.name == NOMINAL)
    lacking = {p.name: p.cand.workloads_without_options() for p in prepared}
    lacking = {k: v for k, v in lacking.items() if v}
    if lacking:
        return _infeasible(rules, run, _lacking_reason(lacking))
    scenarios = [
        two.Scenario(p.name, p.probability, p.cand.instance)
        for p in prepared
        if p.name in {s.name for s in declared}
    ]
    everywhere = [two.Scenario(p.name, p.probability, p.cand.instance) for p in prepared]

    progress("solving the nominal plan")
    nominal_solution = solve(nominal.cand.instance, run.config)
    nominal_first = two.FirstStage(nominal_solution.servers) if nominal_solution.choices else None
    nominal_eval = two.evaluate(nominal_first, everywhere, run.config) if nominal_first else {}
    hint = None
    if nominal_first and all(nominal_eval.get(s.name) for s in scenarios):
        hint = two.TwoStageResult(
            "feasible",
            nominal_first,
            {k: v for k, v in nominal_eval.items() if v is not None},
        )
    progress(f"solving the two-stage plan over {len(scenarios)} scenario(s) ({run.robust})")
    robust: two.Robust = "worst" if run.robust == "worst" else "expected"
    hedged = two.solve_two_stage(
        scenarios, run.config, robust, start_from=nominal_first if hint else None
    )
    if hedged.first is None:
        if hedged.status == "infeasible":
            return _infeasible(
                rules,
                run,
                "no single purchase meets every scenario: relax the hardest scenario "
                "(its demand or its unavailable cards) or drop it",
            )
        limit = run.config.time_limit_s
        timed_out = TimedOut(
            reason=f"no two-stage plan found in {limit:g} s, and none proven impossible; "
            f"try a longer --time-limit (e.g. {max(60.0, 10 * limit):g})",
            time_limit_s=limit,
            bound_of=f"{robust} TCO plus soft-rule penalties",
        )
        return Plan(
            status="timeout",
            objective=f"two-stage {robust} TCO",
            cost=None,
            timed_out=timed_out,
            rules_fired=rules.fired,
            advice=rules.advice,
            solver=SolverInfo(status="timeout", workers=run.config.workers, seed=run.config.seed),
        )
    hedged_eval = two.evaluate(hedged.first, everywhere, run.config)
    comparison = _compare(robust, prepared, declared_names(reqs), hedged_eval, nominal_eval)
    shown = hedged_eval.get(NOMINAL)
    where = nominal
    if shown is None:  # the hedged purchase cannot meet the requirements as written
        where = max(
            (p for p in prepared if p.name in declared_names(reqs)), key=lambda p: p.probability
        )
        shown = hedged_eval[where.name]
    assert shown is not None
    status = "optimal" if hedged.status == "optimal" else "feasible"
    shown = dataclasses.replace(
        shown,
        status=hedged.status,
        objective_value=hedged.objective_value,
        best_bound=hedged.best_bound,
        wall_s=hedged.wall_s,
    )
    info = assemble.solver_info(shown, run.config).model_copy(update=where.cand.scope())
    if robust == "expected":  # the model weighs each scenario by probability x SCALE
        scale = two.PROBABILITY_SCALE
        info = info.model_copy(
            update={
                "objective_value": _per_unit(info.objective_value, scale),
                "best_bound": _per_unit(info.best_bound, scale),
            }
        )
    if not run.timings:
        info = info.model_copy(update={"wall_s": None})
    from gpusolve.explain.bom import bill_of_materials
    from gpusolve.plan.single import headroom_warnings, illustrative_prices

    plan = Plan(
        status=status,
        objective=f"two-stage {robust} TCO",
        cost=assemble.cost(shown, where.cand, where.reqs, where.catalog),
        deployments=assemble.deployments(shown, where.cand, where.reqs),
        sites=assemble.sites(shown, where.cand.instance, where.catalog),
        binding=assemble.binding(shown, where.cand.instance, where.catalog, where.reqs),
        rules_fired=rules.fired,
        advice=[*where.small.values(), *rules.advice],
        solver=info,
        scenarios=comparison,
        warnings=headroom_warnings(reqs, policies),
    )
    update: dict[str, object] = {
        "illustrative_prices": illustrative_prices(plan, where.catalog),
        "bom": bill_of_materials(plan, where.catalog),
    }
    if run.why_not is not None:
        from gpusolve.analyses.hedged_whynot import HedgedContext, hedged_why_not

        progress(f"explaining why not {run.why_not}")
        metas = [p.cand.meta for p in prepared if p.name in declared_names(reqs)]
        ctx = HedgedContext(scenarios, metas, hedged, robust, run.config)
        update["why_not"], update["why_not_plans"] = hedged_why_not(run.why_not, ctx, shown, where)
    return plan.model_copy(update=update)


def _per_unit(value: float | None, scale: int) -> float | None:
    return None if value is None else round(value / scale, 2)


def declared_names(reqs: Requirements) -> set[str]:
    return {s.name for s in reqs.scenarios or []}


def _compare(
    robust: str,
    prepared: list[Prepared],
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
                rented=_rented(mine, p.cand),
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


def _infeasible(rules: RulesSummary, run: ScenarioRun, reason: str) -> Plan:
    return Plan(
        rules_fired=rules.fired,
        advice=rules.advice,
        status="infeasible",
        objective=f"two-stage {run.robust} TCO",
        cost=None,
        infeasibility=Infeasibility(reason=reason),
        solver=SolverInfo(status="infeasible", workers=run.config.workers, seed=run.config.seed),
    )
