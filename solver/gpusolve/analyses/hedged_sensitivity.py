"""`plan --sensitivity` on a plan hedged over a `scenarios:` block.

The parameters are those of `sensitivity.py`, gathered over every scenario's plan (each
price that enters some scenario's cost, each card some scenario's candidates run on). A
parameter moves in every scenario at once: a scenario's own multiplier (`prices:
{servers: 1.3}`, `efficiency: {all: 0.75}`) stays on top of it, so the range reads in the
catalogue's figure, as the requirements write it. Each probe solves the two-stage model
again with the hedged plan as its hint (`optimize.scenarios.solve_two_stage`).

"Same plan" is the same purchase (servers per model and site) and, in every scenario, the
same deployments, servers and racks (`sensitivity.plan_key`). The plan an end switches to
is described by its purchase when that changes and by the deployments of the scenario the
plan shows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gpusolve.analyses.sensitivity import (
    NO_PLAN,
    NOT_FOUND,
    PROBE_TIME_S,
    Inputs,
    OnDone,
    OtherPlan,
    Outcome,
    Parameter,
    PlanKey,
    Probe,
    Stop,
    both_ends,
    describe,
    efficiency_parameters,
    plan_key,
    price_parameters,
    run_tasks,
    scaled_instance,
    to_range,
)
from gpusolve.models.plan import Plan, Sensitivity
from gpusolve.optimize import scenarios as two
from gpusolve.optimize.ir import SolveConfig

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpusolve.models.catalog import Catalog
    from gpusolve.models.policy import WorkloadPolicy
    from gpusolve.models.requirements import Requirements


def hedged_key(result: two.TwoStageResult, scenarios: Sequence[two.Scenario]) -> PlanKey:
    """The purchase, then each scenario's `plan_key` (in the scenarios' order)."""
    if result.first is None:
        return NO_PLAN if result.status == "infeasible" else NOT_FOUND
    purchase = tuple(sorted((sku, site, n) for (sku, site), n in result.first.servers.items()))
    return (
        purchase,
        tuple(plan_key(result.outcomes[s.name], s.instance) for s in scenarios),
    )


def describe_hedged(key: PlanKey, base: PlanKey, names: Sequence[str], shown: int) -> str:
    """The hedged plan `key` in words: its purchase where it differs from `base`'s, then
    what differs in scenario number `shown` (the one the plan shows), else in the first
    scenario that differs."""
    if key in (NO_PLAN, NOT_FOUND):
        return describe(key, base)
    order = [shown] + [i for i in range(len(names)) if i != shown]
    differs = [i for i in order if key[1][i] != base[1][i]]
    where = differs[0] if differs else shown
    words = f"in scenario {names[where]}: {describe(key[1][where], base[1][where])}"
    if key[0] == base[0]:
        return words
    return f"buys {_bought(key)}; {words}"


def _bought(key: PlanKey) -> str:
    return ", ".join(f"{n} x {sku} at {site}" for sku, site, n in key[0]) or "nothing"


def hedged_tco(
    result: two.TwoStageResult,
    scenarios: Sequence[two.Scenario],
    robust: str,
    penalties: bool = False,
) -> int:
    """The TCO the hedge weighs (with `penalties`, plus the soft-rule penalties: what it
    minimises): expected (rounded), or the worst scenario's."""
    costs = [result.outcomes[s.name].costs for s in scenarios]
    values = [(c.tco + (c.penalties if penalties else 0)) if c is not None else 0 for c in costs]
    if robust == "worst":
        return max(values)
    return round(sum(s.probability * v for s, v in zip(scenarios, values, strict=True)))


@dataclass(frozen=True)
class ScenarioTask:
    """One parameter's analysis on the two-stage model: picklable, for the pool."""

    parameter: Parameter
    scenarios: tuple[two.Scenario, ...]
    robust: two.Robust
    base: two.TwoStageResult  # the hedged plan: every probe's hint
    base_key: PlanKey
    shown: int  # the scenario whose deployments the plan shows
    config: SolveConfig

    def analyse(self, inputs: Any) -> Outcome:
        """`inputs`: one `Inputs` per scenario (their own requirements and catalogue)."""
        per_scenario: Sequence[Inputs | None] = inputs or [None] * len(self.scenarios)

        def solve_at(factor: float) -> Probe:
            scaled = tuple(
                replace(s, instance=scaled_instance(self.parameter, s.instance, i, factor))
                for s, i in zip(self.scenarios, per_scenario, strict=True)
            )
            result = two.solve_two_stage(scaled, self.config, self.robust, hint=self.base)
            key = hedged_key(result, scaled)
            found = key not in (NO_PLAN, NOT_FOUND)
            tco = hedged_tco(result, scaled, self.robust) if found else None
            names = [s.name for s in self.scenarios]
            words = describe_hedged(key, self.base_key, names, self.shown)
            return Probe(factor, key, words, tco)

        return both_ends(self.parameter, solve_at, self.base_key)


def hedged_parameters(
    result: two.TwoStageResult,
    scenarios: Sequence[two.Scenario],
    catalog: Catalog,
    currency: str,
    efficiency: bool,
) -> list[Parameter]:
    """Every scenario's prices (`sensitivity.price_parameters`), each once, then the cards'
    efficiency: a card is searched both ways when some scenario's plan runs on it."""
    from gpusolve.analyses.sensitivity import considered_cards, plan_cards

    found: dict[tuple[str, str], Parameter] = {}
    for s in scenarios:
        for p in price_parameters(result.outcomes[s.name], s.instance, catalog, currency):
            found.setdefault((p.kind, p.subject), p)
    if not efficiency:
        return list(found.values())
    cards: set[str] = set()
    rivals: set[str] = set()
    for s in scenarios:
        cards |= set(plan_cards(result.outcomes[s.name], s.instance, catalog))
        rivals |= set(considered_cards(s.instance, catalog))
    return list(found.values()) + efficiency_parameters(cards, rivals)


def analyse_hedged(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: SolveConfig,
    robust: two.Robust,
    workers: int,
    purchase: dict[tuple[str, str], int],
    on_done: OnDone = lambda _: None,
    on_start: Callable[[int], None] = lambda _: None,
    efficiency: bool = True,
    stop: Stop | None = None,
) -> Sensitivity:
    """The ranges of the hedged plan for `reqs`: the two-stage model solved again (the
    reference, which must buy `purchase`, the plan shown), then every parameter over the
    pool. Each probe gets at most `PROBE_TIME_S` of `config`'s time limit."""
    from gpusolve.plan.twostage import NOMINAL, prepare_weighed

    started = time.perf_counter()
    prepared, scenarios = prepare_weighed(reqs, catalog, policies)
    # Hinted with the purchase shown: among purchases of equal cost, the one the user sees.
    shown_purchase = two.TwoStageResult("feasible", two.FirstStage(purchase))
    base = two.solve_two_stage(scenarios, replace(config, workers=1), robust, hint=shown_purchase)
    base_key = hedged_key(base, scenarios)
    if base_key in (NO_PLAN, NOT_FOUND):
        return Sensitivity(wall_s=time.perf_counter() - started, solves=1)
    assert base.first is not None
    if {k: n for k, n in base.first.servers.items() if n} != purchase:
        raise OtherPlan(f"it buys {_bought(base_key)}")
    names = [s.name for s in scenarios]
    likeliest = max(scenarios, key=lambda s: s.probability).name
    shown = names.index(NOMINAL if NOMINAL in names else likeliest)
    probe_config = replace(config, workers=1, time_limit_s=min(config.time_limit_s, PROBE_TIME_S))
    params = hedged_parameters(base, scenarios, catalog, reqs.currency, efficiency)
    tasks = [
        ScenarioTask(p, scenarios, robust, base, base_key, shown, probe_config) for p in params
    ]
    on_start(len(tasks))
    inputs = [Inputs(p.reqs, p.catalog, policies) for p in prepared]
    outcomes = run_tasks(tasks, workers, inputs, on_done, stop)
    return Sensitivity(
        ranges=[to_range(o) for o in outcomes],
        solves=1 + sum(o.solves for o in outcomes),
        wall_s=round(time.perf_counter() - started, 3),
    )


def plan_purchase(plan: Plan) -> dict[tuple[str, str], int]:
    """What the plan shown buys: servers per (model, site)."""
    return {(sku, s.offer): n for s in plan.sites for sku, n in s.servers.items() if n}
