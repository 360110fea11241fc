"""`plan --sensitivity`: how far each price or assumption may move before the plan changes.

For every parameter that enters the chosen plan's cost (each bought server's price, each
used colocation offer's rack rent, power price and bandwidth price, each rented cloud
offer's price, its hourly, monthly and reserved tiers together, each switch, link, NIC and
storage node the plan buys) and the efficiency of each card the candidates considered, the
plan is re-solved with that one parameter multiplied by a factor, hinted with the chosen
plan, and its range searched (`probing.py`); the parameters run over a process pool
(`pool.py`). Prices scale the instance's coefficients; network and storage prices and
card efficiency are priced again from a catalogue copy (`candidates/scaling.py`). A card
the plan does not use is searched upwards only: slower, it cannot win. The FP32 peak is
left alone: rule h13 prefers cards by their FP32 datasheet figure, which is not an
efficiency.

The instance analysed is the one the plan solved (`Solved`), solved once more as the
reference every probe is compared with; a reference that is not the plan shown (a plan
not proven optimal) gives no ranges.

A plan hedged over a `scenarios:` block is analysed on its two-stage model: the
parameters are gathered over every scenario's plan, and a parameter moves in every
scenario at once (a scenario's own multiplier, `prices: {servers: 1.3}`, stays on top of
it, so the range reads in the catalogue's figure). "Same plan" is then the same purchase
and, in every scenario, the same deployments, servers and racks; an end that switches is
described by its purchase when that changes and by the deployments of the scenario the
plan shows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from gpusolve.analyses.cluster import Cluster
from gpusolve.analyses.pool import (
    OnDone,
    Stop,
    default_workers,
    progress_bar,
    run_tasks,
    stoppable,
)
from gpusolve.analyses.probing import (
    NO_PLAN,
    NOT_FOUND,
    Outcome,
    Parameter,
    PlanKey,
    Probe,
    both_ends,
    describe,
    describe_hedged,
    hedged_key,
    past_deadline,
    plan_key,
    purchase_words,
    to_range,
)
from gpusolve.candidates.network import nic_for, rack_network
from gpusolve.candidates.scaling import (
    CandidateInputs,
    card_instance,
    network_instance,
    scale_instance,
)
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Plan, Sensitivity, SensitivityKind
from gpusolve.models.schedule import Schedule
from gpusolve.optimize.inventory import purchases
from gpusolve.optimize.ir import Instance, Solution, SolveConfig, rentals
from gpusolve.optimize.twostage import solve as twostage
from gpusolve.plan.solved import Hedged, Phased, Single, Solved
from gpusolve.plan.twostage import NOMINAL

# Each probe is a small re-solve of a plan CP-SAT already knows (the hint); a probe that
# takes longer than this keeps its best plan.
PROBE_TIME_S = 10.0


def parameters(
    solution: Solution,
    instance: Instance,
    catalog: Catalog,
    currency: str,
    cards: Iterable[str] = (),
    rivals: Iterable[str] = (),
) -> list[Parameter]:
    """Every price that enters the plan's cost (zero prices cannot move by a factor and are
    left out), then the efficiency of each card in `cards` (the plan's) and `rivals` (the
    other cards the candidates considered)."""
    prices = price_parameters(solution, instance, catalog, currency)
    return prices + efficiency_parameters(cards, rivals)


def price_parameters(
    solution: Solution, instance: Instance, catalog: Catalog, currency: str
) -> list[Parameter]:
    """Every price that enters the plan's cost, but zero prices (no factor moves them)."""
    out: list[Parameter] = []
    bought = purchases(instance, solution.servers, solution.bought)  # owned ones cost nothing
    for sku in sorted({sku for (sku, _), n in bought.items() if n}):
        server = catalog.servers[sku]
        out.append(
            Parameter("server_price", sku, f"price of {sku}", f"{currency}/server", server.price)
        )
    sites = sorted({site for (_, site), n in solution.servers.items() if n})
    for site_id in sites:
        offer = catalog.colo_offers[site_id]
        if offer.rack_price_per_month > 0:
            out.append(
                Parameter(
                    "rack_rent",
                    site_id,
                    f"rack rent at {site_id}",
                    f"{currency}/rack-month",
                    offer.rack_price_per_month,
                )
            )
        if offer.power_price_per_kwh > 0 and not offer.power_included:
            out.append(
                Parameter(
                    "power_price",
                    site_id,
                    f"power price at {site_id}",
                    f"{currency}/kWh",
                    offer.power_price_per_kwh,
                )
            )
        if offer.bandwidth_price_per_mbps_month > 0:
            out.append(
                Parameter(
                    "bandwidth_price",
                    site_id,
                    f"bandwidth price at {site_id}",
                    f"{currency}/Mbps-month",
                    offer.bandwidth_price_per_mbps_month,
                )
            )
    for offer_id in sorted({r.offer for _, r in rentals(solution, instance)}):
        price = catalog.cloud_offers[offer_id].price_per_hour
        out.append(
            Parameter(
                "cloud_price", offer_id, f"price of {offer_id}", f"{currency}/instance-hour", price
            )
        )
    for kind, item_id, unit, price in bought_network(solution, instance, catalog):
        out.append(Parameter(kind, item_id, f"price of {item_id}", f"{currency}/{unit}", price))
    return out


def efficiency_parameters(cards: Iterable[str], rivals: Iterable[str] = ()) -> list[Parameter]:
    """The efficiency of each card in `cards` (the plan's: searched both ways), then of
    each other card in `rivals` (searched upwards only)."""
    out: list[Parameter] = []
    for card in sorted(set(cards)):
        out.append(Parameter("efficiency", card, f"efficiency of {card}", "x modelled speed", 1.0))
    for card in sorted(set(rivals) - set(cards)):
        words = f"efficiency of {card} (not in the plan)"
        out.append(Parameter("efficiency", card, words, "x modelled speed", 1.0, rival=True))
    return out


def bought_network(
    solution: Solution, instance: Instance, catalog: Catalog
) -> list[tuple[SensitivityKind, str, str, float]]:
    """(kind, catalogue id, unit, catalogue price) of each priced switch, link, NIC, PDU and
    storage node the plan buys (`network_lines` itemises the same purchase)."""
    found: dict[str, tuple[SensitivityKind, str, float]] = {}

    def add(kind: SensitivityKind, item_id: str, unit: str, price: float) -> None:
        if price > 0:
            found.setdefault(item_id, (kind, unit, price))

    for (_, cls), count in solution.fabric.items():
        fabric = instance.fabrics[cls]
        own = count.single + count.leaves + count.spines
        if own and fabric.switch in catalog.switches:
            add("network_price", fabric.switch, "switch", catalog.switches[fabric.switch].price)
        if count.small is not None and count.small in catalog.switches:
            add("network_price", count.small, "switch", catalog.switches[count.small].price)
        if count.ports and fabric.link in catalog.links:
            add("network_price", fabric.link, "link", catalog.links[fabric.link].price)
        cable = fabric.direct_link
        if count.direct_links and cable is not None and cable in catalog.links:
            add("network_price", cable, "link", catalog.links[cable].price)
    on_fabric = {site for site, _ in solution.fabric}
    for (sku_id, site), n in solution.servers.items():
        sku = instance.skus[sku_id]
        if n and sku.nic_capex and site in on_fabric and sku_id in catalog.servers:
            nic = nic_for(catalog, catalog.servers[sku_id])
            if nic is not None:
                add("network_price", nic.id, "NIC", nic.price)
    racked = {site for (site, fill), n in solution.racks.items() if fill and n}
    for site in sorted(racked):
        here = instance.sites[site]
        if not here.rack_network_capex:
            continue
        parts = rack_network(catalog, 1.0, here.rack_servers, here.pdu_feed_w)
        for part in parts.switches():
            add("network_price", part.switch.id, "switch", part.switch.price)
            if part.uplink is not None and part.switch.uplinks:
                add("network_price", part.uplink.id, "link", part.uplink.price)
        if parts.pdus is not None:
            add("network_price", parts.pdus.pdu.id, "PDU", parts.pdus.pdu.price)
    for (_, kind_id), nodes in solution.storage.items():
        if nodes and kind_id in catalog.storage:
            add("storage_price", kind_id, "storage node", catalog.storage[kind_id].price)
    return [(kind, i, unit, price) for i, (kind, unit, price) in sorted(found.items())]


@dataclass(frozen=True)
class Task:
    """One parameter's whole analysis: everything a pool worker needs, picklable."""

    parameter: Parameter
    instance: Instance  # the plan's instance (prices scale it)
    base_solution: Solution  # the plan: the hint for every probe
    base_key: PlanKey
    config: SolveConfig

    def analyse(self, inputs: Any) -> Outcome:
        return analyse_one(self, inputs)


def probe_solve(instance: Instance, config: SolveConfig, hint_from: Solution | None) -> Solution:
    """A re-solve of `instance` started from the choices of `hint_from` (partial hint:
    options of the same key and site are set, every other choice unset)."""
    from gpusolve.optimize.model import build
    from gpusolve.optimize.solve import solve_built

    built = build(instance)
    hint: dict[int, int] | None = None
    if hint_from is not None and hint_from.choices:
        chosen = {(c.option, c.site) for c in hint_from.choices}
        hint = {o.var.index: int((o.option.key, o.placement.site) in chosen) for o in built.owned}
        hint |= {c.var.index: int((c.option.key, None) in chosen) for c in built.cloud}
    return solve_built(built, config, hint=hint).solution


# Parameters priced again from a scaled catalogue copy, not by scaling coefficients.
_FROM_CATALOGUE = ("efficiency", "network_price", "storage_price")


def scaled_instance(
    p: Parameter, instance: Instance, inputs: CandidateInputs | None, factor: float
) -> Instance:
    """`instance` with parameter `p` at `factor` x its value."""
    if p.kind not in _FROM_CATALOGUE:
        return scale_instance(instance, p.kind, p.subject, factor)
    if inputs is None:
        raise ValueError(f"a {p.kind} parameter needs the run's inputs")
    if p.kind == "efficiency":
        return card_instance(instance, inputs, p.subject, factor)
    return network_instance(instance, inputs, p.subject, factor)


def analyse_one(task: Task, inputs: CandidateInputs | None = None) -> Outcome:
    """Both ends of one parameter's range (a pool worker's whole job)."""

    def solve_at(factor: float) -> Probe:
        late = past_deadline(factor, task.base_key)
        if late is not None:
            return late
        instance = scaled_instance(task.parameter, task.instance, inputs, factor)
        solution = probe_solve(instance, task.config, task.base_solution)
        key = plan_key(solution, instance)
        tco = solution.costs.tco if solution.costs is not None else None
        return Probe(factor, key, describe(key, task.base_key), tco)

    return both_ends(task.parameter, solve_at, task.base_key)


def analyse(
    instance: Instance,
    inputs: CandidateInputs,
    config: SolveConfig,
    workers: int,
    on_done: OnDone = lambda _: None,
    on_start: Callable[[int], None] = lambda _: None,
    efficiency: bool = True,
    stop: Stop | None = None,
    expected: tuple[tuple[Any, ...], ...] | None = None,
    rivals_too: bool = True,
    cluster: Cluster | None = None,
) -> Sensitivity:
    """The sensitivity of the plan of `instance` (prepared from `inputs`): the instance
    solved again (the reference every probe is compared with), then every parameter's
    range over the pool (prices only unless `efficiency`). `expected`: the deployments of
    the plan shown (`shown_choices`); a reference that differs raises `OtherPlan`. The
    reference gets the whole of `config`'s time limit, each probe at most `PROBE_TIME_S`."""
    started = time.perf_counter()
    catalog = inputs.catalog
    base = probe_solve(instance, replace(config, workers=1), None)
    base_key = plan_key(base, instance)
    found = base_key not in (NO_PLAN, NOT_FOUND)
    if expected is not None and (not found or base_key[0] != expected):
        raise OtherPlan(describe(base_key, NO_PLAN))
    if not found:
        return Sensitivity(wall_s=time.perf_counter() - started, solves=1)
    # The pool is the parallelism; a probe starts from the plan (the hint) and is small.
    probe_config = _probe_config(config)
    cards = plan_cards(base, instance, catalog) if efficiency else []
    rivals = considered_cards(instance, catalog) if efficiency and rivals_too else []
    params = parameters(base, instance, catalog, inputs.reqs.currency, cards, rivals)
    tasks = [Task(p, instance, base, base_key, probe_config) for p in params]
    on_start(len(tasks))
    if cluster is not None:  # the parameters on a Ray cluster (analyses/cluster.py)
        outcomes = cluster.run(tasks)
        for outcome in outcomes:
            on_done(outcome)
    else:
        outcomes = run_tasks(tasks, workers, inputs, on_done, stop)
    return _sensitivity(outcomes, started)


def _probe_config(config: SolveConfig) -> SolveConfig:
    if config.work_limit is not None:
        # A run with a deterministic limit gives the same ranges on any load: each probe
        # stops at its share of work, the wall clock stays only a safety net.
        return replace(config, workers=1, work_limit=min(config.work_limit, PROBE_TIME_S))
    return replace(config, workers=1, time_limit_s=min(config.time_limit_s, PROBE_TIME_S))


def _sensitivity(outcomes: list[Outcome], started: float) -> Sensitivity:
    return Sensitivity(
        ranges=[to_range(o) for o in outcomes],
        solves=1 + sum(o.solves for o in outcomes),
        wall_s=round(time.perf_counter() - started, 3),
    )


class OtherPlan(Exception):
    """The reference re-solve found another plan than the one shown (which was then not
    proven optimal): ranges around it would describe a plan the user does not see."""


def shown_choices(plan: Plan) -> tuple[tuple[Any, ...], ...]:
    """The plan's deployments as `plan_key` writes a plan's choices."""
    return tuple(
        sorted(
            (d.workload, "own", d.server, d.servers, d.site or "")
            if d.mode == "owned"
            else (d.workload, "rent", d.cloud_offer, d.servers, "")
            for d in plan.deployments
        )
    )


def considered_cards(instance: Instance, catalog: Catalog) -> list[str]:
    """Every card some candidate of the instance runs on."""
    cards = {catalog.servers[o.sku].card for o in instance.owned}
    cards |= {catalog.cloud_offers[o.offer].card for o in instance.cloud}
    return sorted(cards)


def plan_cards(solution: Solution, instance: Instance, catalog: Catalog) -> list[str]:
    """The cards the plan runs on: of each server it buys and each cloud offer it rents."""
    cards = {catalog.servers[sku].card for (sku, _), n in solution.servers.items() if n}
    cards |= {catalog.cloud_offers[r.offer].card for _, r in rentals(solution, instance)}
    return sorted(cards)


def run(
    solved: Solved,
    *,
    bar: bool = True,
    workers: int | None = None,
    efficiency: bool = True,
    bounded: bool = False,
    cluster: Cluster | None = None,
) -> Plan | Schedule:
    """The plan with its sensitivity filled in (plans only: a run without one is returned as
    it is). Each probe gets at most `PROBE_TIME_S` of the run's time limit. The wall time
    is kept only with `--timings`, as the plan's own: the same input gives the same output.
    A hedged plan is analysed on its two-stage model, a schedule on its own
    (`schedule_ranges.py`). `bounded` (the memo's default analysis): the plan's own prices
    and cards only, no rival card searched; a schedule is returned as it is. `cluster`: a
    single or hedged plan's parameters run on that Ray cluster (a schedule's stay on the
    local pool)."""
    if solved.plan.status not in ("optimal", "feasible") or solved.solution is None:
        return solved.plan
    if bounded and isinstance(solved.solution, Phased):
        return solved.plan
    if isinstance(solved.solution, Phased):
        return _schedule_ranges(solved, solved.solution, bar, workers)
    plan, solution = solved.single_plan, solved.solution
    progress: list[Any] = []

    def start(total: int) -> None:
        progress.append(progress_bar(total, bar))

    def done(_: Outcome) -> None:
        progress[0].update(1)

    stop = Stop()
    pool = workers or default_workers()
    config = solved.options.config
    inputs = CandidateInputs(solved.run.reqs, solved.run.catalog, solved.run.policies)

    def work() -> Sensitivity:
        if isinstance(solution, Hedged):
            return analyse_hedged(
                solution,
                inputs,
                config,
                pool,
                plan_purchase(plan),
                on_done=done,
                on_start=start,
                efficiency=efficiency,
                stop=stop,
                rivals_too=not bounded,
                cluster=cluster,
            )
        assert isinstance(solution, Single)
        return analyse(
            solution.instance,
            inputs,
            config,
            pool,
            on_done=done,
            on_start=start,
            efficiency=efficiency,
            stop=stop,
            expected=shown_choices(plan),
            rivals_too=not bounded,
            cluster=cluster,
        )

    try:
        result = stoppable(work, stop)
    except OtherPlan as other:
        note = (
            f"--sensitivity: solved again, the plan is not the one shown ({other}): the plan "
            "shown is not proven optimal, so no ranges are given (try a longer --time-limit)"
        )
        return plan.model_copy(update={"warnings": [*plan.warnings, note]})
    finally:
        for shown in progress:
            shown.close()
    if not solved.options.timings:
        result = result.model_copy(update={"wall_s": 0.0})
    return plan.model_copy(update={"sensitivity": result})


def _schedule_ranges(
    solved: Solved, phased: Phased, bar: bool, workers: int | None
) -> Plan | Schedule:
    from gpusolve.analyses import schedule_ranges

    shown: list[Any] = []
    stop = Stop()

    def work() -> Sensitivity:
        return schedule_ranges.analyse(
            phased.instance,
            phased.best,
            solved.run.reqs.currency,
            solved.options.config,
            workers or default_workers(),
            on_done=lambda _: shown[0].update(1),
            on_start=lambda total: shown.append(progress_bar(total, bar)),
            stop=stop,
        )

    try:
        result = stoppable(work, stop)
    finally:
        for bar_shown in shown:
            bar_shown.close()
    if not solved.options.timings:
        result = result.model_copy(update={"wall_s": 0.0})
    return solved.plan.model_copy(update={"sensitivity": result})


@dataclass(frozen=True)
class ScenarioTask:
    """One parameter's analysis on the two-stage model: picklable, for the pool and Ray."""

    # It reads one set of inputs per scenario (a Ray worker builds them: `cluster.py`).
    per_scenario: ClassVar[bool] = True
    parameter: Parameter
    scenarios: tuple[twostage.Scenario, ...]
    robust: twostage.Robust
    base: twostage.TwoStageResult  # the hedged plan: every probe's hint
    base_key: PlanKey
    shown: int  # the scenario whose deployments the plan shows
    config: SolveConfig

    def analyse(self, inputs: Any) -> Outcome:
        """`inputs`: one `CandidateInputs` per scenario (their own requirements and catalogue)."""
        per_scenario: Sequence[CandidateInputs | None] = inputs or [None] * len(self.scenarios)

        def solve_at(factor: float) -> Probe:
            late = past_deadline(factor, self.base_key)
            if late is not None:
                return late
            scaled = tuple(
                replace(s, instance=scaled_instance(self.parameter, s.instance, i, factor))
                for s, i in zip(self.scenarios, per_scenario, strict=True)
            )
            result = twostage.solve_two_stage(scaled, self.config, self.robust, hint=self.base)
            key = hedged_key(result, scaled)
            found = key not in (NO_PLAN, NOT_FOUND)
            tco = twostage.hedged_tco(result, scaled, self.robust) if found else None
            names = [s.name for s in self.scenarios]
            words = describe_hedged(key, self.base_key, names, self.shown)
            return Probe(factor, key, words, tco)

        return both_ends(self.parameter, solve_at, self.base_key)


def hedged_parameters(
    result: twostage.TwoStageResult,
    scenarios: Sequence[twostage.Scenario],
    catalog: Catalog,
    currency: str,
    efficiency: bool,
    rivals_too: bool = True,
) -> list[Parameter]:
    """Every scenario's prices (`sensitivity.price_parameters`), each once, then the cards'
    efficiency: a card is searched both ways when some scenario's plan runs on it."""
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
        rivals |= set(considered_cards(s.instance, catalog)) if rivals_too else set()
    return list(found.values()) + efficiency_parameters(cards, rivals)


def analyse_hedged(
    hedged: Hedged,
    inputs: CandidateInputs,
    config: SolveConfig,
    workers: int,
    purchase: dict[tuple[str, str], int],
    on_done: OnDone = lambda _: None,
    on_start: Callable[[int], None] = lambda _: None,
    efficiency: bool = True,
    stop: Stop | None = None,
    rivals_too: bool = True,
    cluster: Cluster | None = None,
) -> Sensitivity:
    """The ranges of the hedged plan: its two-stage model solved again (the reference,
    which must buy `purchase`, the plan shown), then every parameter over the pool. Each
    probe gets at most `PROBE_TIME_S` of `config`'s time limit. `inputs`: the run's, as
    written (each scenario's own are in `hedged`)."""
    started = time.perf_counter()
    scenarios, robust = hedged.weighed, hedged.robust
    # Hinted with the purchase shown: among purchases of equal cost, the one the user sees.
    shown_purchase = twostage.TwoStageResult("feasible", twostage.FirstStage(purchase))
    base = twostage.solve_two_stage(
        scenarios, replace(config, workers=1), robust, hint=shown_purchase
    )
    base_key = hedged_key(base, scenarios)
    if base_key in (NO_PLAN, NOT_FOUND):
        return Sensitivity(wall_s=time.perf_counter() - started, solves=1)
    assert base.first is not None
    if {k: n for k, n in base.first.servers.items() if n} != purchase:
        raise OtherPlan(f"it buys {purchase_words(base_key)}")
    names = [s.name for s in scenarios]
    likeliest = max(scenarios, key=lambda s: s.probability).name
    shown = names.index(NOMINAL if NOMINAL in names else likeliest)
    currency = inputs.reqs.currency
    params = hedged_parameters(base, scenarios, inputs.catalog, currency, efficiency, rivals_too)
    probe_config = _probe_config(config)
    tasks = [
        ScenarioTask(p, scenarios, robust, base, base_key, shown, probe_config) for p in params
    ]
    on_start(len(tasks))
    if cluster is not None:  # the parameters on a Ray cluster (analyses/cluster.py)
        outcomes = cluster.run(tasks)
        for outcome in outcomes:
            on_done(outcome)
        return _sensitivity(outcomes, started)
    per_scenario = [
        CandidateInputs(s.prepared.reqs, s.prepared.catalog, inputs.policies)
        for s in hedged.scenarios
    ]
    outcomes = run_tasks(tasks, workers, per_scenario, on_done, stop)
    return _sensitivity(outcomes, started)


def plan_purchase(plan: Plan) -> dict[tuple[str, str], int]:
    """What the plan shown buys: servers per (model, site)."""
    return {(sku, s.offer): n for s in plan.sites for sku, n in s.servers.items() if n}
