"""`plan --risk N`: the chosen plan over N draws of an uncertain world.

What is drawn (numpy's PCG64 generator, seeded by `--seed`, the draws in a fixed order so
a seed gives the same world on any machine and any pool):
- each server's price, for servers with a `price_range` in the catalogue: triangular
  between the range's low and high with its mode at the catalogue price (the price the
  plan used is the likeliest, the range its sources give the ends);
- each card's efficiency (speed against the modelled speed), for the cards the plan runs
  on: uniform within +-20%, the gate the serving model is validated at against
  TensorRT-LLM's published tables (benchmarks/README.md, "Serving at load": all 20 within
  it, at +3% to +19%);
- each workload's demand: a service's tokens/s (its users at once when it states no
  tokens/s), a training workload's runs over the horizon, triangular within +-20% of the
  figure written, mode at it. Illustrative: the requirements state no range for demand
  (a `scenarios:` block hedges stated demand in the two-stage plan instead).
Prices without a range (racks, power, bandwidth, cloud, network) are held: the catalogue
gives no range to draw from.

Re-pricing (the default, vectorised): the plan's hardware held, its TCO per draw is its
TCO plus each server line times (drawn / catalogue price - 1), each hourly rental of a
training run times (drawn runs / efficiency - 1) (a slower card rents for longer, more
runs rent more hours), and an owned training run's energy above idle (`run_cost`) times
runs x (drawn runs / efficiency - 1). A service's rental and servers run every hour of
its slot whatever the draw: a slower card or more demand is a shortfall, not a cost. A
training run slower than its deadline allows counts as missed; a draw whose demand the
plan cannot meet counts as a shortfall, reported as a probability and not priced (the
plan meets every demand as a constraint and prices none left unmet). With `--replan`
each draw is planned again to meet its demand (the plan's inputs with the draw's prices,
efficiencies and demand, solved with the plan as a hint), on the local process pool or on
a Ray cluster (`analyses/cluster.py`); each draw is one deterministic solve, so a seed
gives the same figures on either.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusolve.analyses.cluster import Cluster
from gpusolve.analyses.probing import describe, plan_key
from gpusolve.candidates.scaling import CandidateInputs, scale_card
from gpusolve.explain.payments import is_credit, rented_by, spend
from gpusolve.models.catalog import Card, Catalog
from gpusolve.models.money import HistogramBin, Risk, RiskPlan, slot_hours_per_month
from gpusolve.models.plan import Deployment, Plan
from gpusolve.models.requirements import InferenceWorkload, Requirements
from gpusolve.optimize.ir import Instance, Solution, SolveConfig

if TYPE_CHECKING:
    from gpusolve.plan.solved import Solved

# Card efficiency: +-20%, the serving model's validation gate (benchmarks/README.md).
EFFICIENCY_BAND = 0.20
# Demand: +-20% of the figure written, an illustrative band (the requirements state none).
DEMAND_BAND = 0.20
# Efficiency and demand are drawn on whole percents: far finer than the physics' band or
# any demand forecast, and coarse enough that re-planned draws repeat each other's layout
# searches (a search is keyed by the card's speed and the demand it sizes for).
PERCENT_PLACES = 2
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class Draws:
    """N draws: per server, drawn price / catalogue price; per card, drawn efficiency; per
    workload, drawn demand / the demand written."""

    seed: int
    servers: tuple[str, ...]
    server_factors: np.ndarray[Any, Any]  # (n, servers)
    cards: tuple[str, ...]
    card_factors: np.ndarray[Any, Any]  # (n, cards)
    workloads: tuple[str, ...] = ()
    demand_factors: np.ndarray[Any, Any] = field(default_factory=lambda: np.ones((0, 0)))

    @property
    def n(self) -> int:
        return int(self.server_factors.shape[0])

    def demand(self, workload: str) -> np.ndarray[Any, Any]:
        """The workload's demand factor in every draw (1 where its demand is not drawn)."""
        if workload not in self.workloads:
            return np.ones(self.n)
        return np.asarray(self.demand_factors[:, self.workloads.index(workload)])

    def efficiency(self, card: str) -> np.ndarray[Any, Any]:
        """The card's efficiency in every draw (1 where it is not drawn)."""
        if card not in self.cards:
            return np.ones(self.n)
        return np.asarray(self.card_factors[:, self.cards.index(card)])


def draw(
    n: int,
    seed: int,
    price_ranges: Mapping[str, tuple[float, float, float]],
    cards: Sequence[str],
    band: float = EFFICIENCY_BAND,
    workloads: Sequence[str] = (),
    demand_band: float = DEMAND_BAND,
) -> Draws:
    """`n` draws: each server's price triangular (low, catalogue price, high), as a factor
    of the catalogue price; each card's efficiency uniform over the whole percents in
    [1 - band, 1 + band]; each workload's demand triangular (1 - demand_band, 1,
    1 + demand_band), rounded to a whole percent. Drawn in that order, each kind sorted by
    name, so a seed's prices and efficiencies stay the same whether demand is drawn or
    not."""
    rng = np.random.Generator(np.random.PCG64(seed))
    servers = tuple(sorted(price_ranges))
    factors = np.ones((n, len(servers)))
    for j, server in enumerate(servers):
        low, mode, high = price_ranges[server]
        if high > low:
            factors[:, j] = rng.triangular(low, mode, high, n) / mode
    names = tuple(sorted(cards))
    percents = round(band * 100)
    steps = rng.integers(-percents, percents + 1, (n, len(names)))
    efficiency = np.round(1 + steps / 100, PERCENT_PLACES)
    loads = tuple(sorted(workloads))
    demand = np.ones((n, len(loads)))
    if loads and demand_band > 0:
        spread = rng.triangular(1 - demand_band, 1.0, 1 + demand_band, (n, len(loads)))
        demand = np.round(spread, PERCENT_PLACES)
    return Draws(seed, servers, factors, names, efficiency, loads, demand)


@dataclass(frozen=True)
class Need:
    """One workload's demand as the draws move it: a service's tokens/s or users at once,
    or a training workload's runs over the horizon (`figure` as written); for training,
    the hours its slot holds over the horizon (what the runs must fit in)."""

    workload: str
    unit: str  # "tokens/s", "users" or "runs"
    figure: float
    slot_hours: float = 0.0


def needs(reqs: Requirements) -> list[Need]:
    """Each workload's demand as written, in the requirements' order."""
    out = []
    for w in reqs.workloads:
        if isinstance(w, InferenceWorkload):
            if w.target_tokens_per_s is not None:
                out.append(Need(w.name, "tokens/s", w.target_tokens_per_s))
            elif w.concurrency is not None:
                out.append(Need(w.name, "users", float(w.concurrency)))
        else:
            hours = slot_hours_per_month(w.schedule) * reqs.horizon_months
            out.append(Need(w.name, "runs", w.runs, hours))
    return out


def with_demand(reqs: Requirements, factors: Mapping[str, float]) -> Requirements:
    """The requirements with each workload's demand at `factor` x the figure written: a
    service's tokens/s (its users at once, rounded up, when it states no tokens/s), a
    training workload's runs."""
    workloads = []
    for w in reqs.workloads:
        f = factors.get(w.name, 1.0)
        if f == 1.0:
            workloads.append(w)
        elif not isinstance(w, InferenceWorkload):
            workloads.append(w.model_copy(update={"runs": w.runs * f}))
        elif w.target_tokens_per_s is not None:
            workloads.append(
                w.model_copy(update={"target_tokens_per_s": w.target_tokens_per_s * f})
            )
        else:
            assert w.concurrency is not None  # the model requires one of the two
            workloads.append(w.model_copy(update={"concurrency": math.ceil(w.concurrency * f)}))
    return reqs.model_copy(update={"workloads": workloads})


def price_ranges(plan: Plan, catalog: Catalog) -> dict[str, tuple[float, float, float]]:
    """(low, price, high) of each server the plan buys that has a catalogue price range."""
    assert plan.cost is not None
    out = {}
    for item in plan.cost.breakdown.items:
        server = catalog.servers.get(item.subject)
        if item.kind == "servers_capex" and server is not None and server.price_range:
            r = server.price_range
            out[item.subject] = (r.low, server.price, r.high)
    return out


def plan_cards(plan: Plan) -> list[str]:
    return sorted({d.card for d in plan.deployments})


def reprice(
    plan: Plan, draws: Draws, runs: Mapping[str, float] | None = None
) -> np.ndarray[Any, Any]:
    """The plan's TCO in every draw, its hardware held (see the module's docstring).
    `runs`: each training workload's runs as written (its owned energy per run scales)."""
    assert plan.cost is not None
    tco = np.full(draws.n, spend(plan.cost))
    server_at = {s: j for j, s in enumerate(draws.servers)}
    for item in plan.cost.breakdown.items:
        if is_credit(item) or not item.amount:
            continue
        # Financing's interest is a share of the price (down, instalments and buy-out all
        # are): it moves with the server's price as the price line does.
        if item.kind in ("servers_capex", "financing") and item.subject in server_at:
            tco += item.amount * (draws.server_factors[:, server_at[item.subject]] - 1)
        elif item.kind == "cloud_rental" and item.unit == "instance-hour":
            d = rented_by(item, plan.deployments)
            if d is not None and d.time_to_train_h is not None:
                tco += item.amount * (_hours_factor(d, draws) - 1)
    for d in plan.deployments:
        if d.mode == "owned" and d.run_cost and runs and d.workload in runs:
            tco += d.run_cost * runs[d.workload] * (_hours_factor(d, draws) - 1)
    return tco


def _hours_factor(d: Deployment, draws: Draws) -> np.ndarray[Any, Any]:
    """A training deployment's hours in every draw against the plan's: drawn runs over the
    card's drawn efficiency."""
    return np.asarray(draws.demand(d.workload) / draws.efficiency(d.card))


def missed(plan: Plan, draws: Draws, deadlines_h: Mapping[str, float]) -> np.ndarray[Any, Any]:
    """Per draw, whether a training run of the plan misses its deadline once its card's
    efficiency draw slows or speeds it."""
    out = np.zeros(draws.n, dtype=bool)
    for d in plan.deployments:
        limit = deadlines_h.get(d.workload)
        if d.time_to_train_h is None or not limit or d.card not in draws.cards:
            continue
        out |= d.time_to_train_h / draws.efficiency(d.card) > limit
    return out


def short(plan: Plan, draws: Draws, wanted: Sequence[Need]) -> dict[str, np.ndarray[Any, Any]]:
    """Per workload with a drawn demand, per draw, whether the plan falls short of it: a
    service delivers target x (1 + spare) tokens/s, times its card's drawn efficiency (users
    held are set by memory and the latency targets: efficiency is not applied to them); a
    training workload's drawn runs take runs x hours per run / efficiency, within the hours
    its slot holds over the horizon."""
    out: dict[str, np.ndarray[Any, Any]] = {}
    for need in wanted:
        if need.workload not in draws.workloads:
            continue
        demand = draws.demand(need.workload)
        lacking = np.zeros(draws.n, dtype=bool)
        for d in (d for d in plan.deployments if d.workload == need.workload):
            if need.unit == "runs" and d.time_to_train_h is not None:
                hours = need.figure * demand * d.time_to_train_h / draws.efficiency(d.card)
                lacking |= hours > need.slot_hours
            elif need.unit in ("tokens/s", "users") and d.spare is not None:
                speed = draws.efficiency(d.card) if need.unit == "tokens/s" else np.ones(draws.n)
                lacking |= demand > (1 + d.spare) * speed
        out[need.workload] = lacking
    return out


def histogram(tco: np.ndarray[Any, Any], bins: int = HISTOGRAM_BINS) -> list[HistogramBin]:
    counts, edges = np.histogram(tco, bins=bins)
    return [
        HistogramBin(low=float(edges[i]), high=float(edges[i + 1]), draws=int(c))
        for i, c in enumerate(counts)
    ]


def told(draws: Draws, wanted: Sequence[Need] = ()) -> list[str]:
    """What was drawn, from what, how: one line per drawn figure."""
    out = [
        f"price of {s}: triangular between its catalogue price_range ends, mode at its price"
        for s in draws.servers
    ]
    out += [
        f"efficiency of {c}: uniform over the whole percents within +-{EFFICIENCY_BAND:.0%} "
        "of the modelled speed (the serving model's validation gate, benchmarks/README.md)"
        for c in draws.cards
    ]
    out += [
        f"demand of {n.workload}: {n.unit} triangular within +-{DEMAND_BAND:.0%} of the "
        f"{n.figure:,.6g} written, mode at it, to a whole percent (illustrative: the "
        "requirements state no range)"
        for n in wanted
        if n.workload in draws.workloads
    ]
    return out


def summary(
    tco: np.ndarray[Any, Any],
    draws: Draws,
    missed_share: float,
    held: str,
    lacking: Mapping[str, np.ndarray[Any, Any]] | None = None,
    wanted: Sequence[Need] = (),
) -> Risk:
    """P10/P50/P90 (numpy's linear interpolation between order statistics), the mean and
    the histogram of `tco`; the shares of draws the plan falls short in."""
    p10, p50, p90 = (round(float(v), 2) for v in np.percentile(tco, [10, 50, 90]))
    lacking = lacking or {}
    anywhere = np.zeros(draws.n, dtype=bool)
    for per_draw in lacking.values():
        anywhere |= per_draw
    return Risk(
        draws=draws.n,
        seed=draws.seed,
        distributions=told(draws, wanted),
        held=held,
        p10=p10,
        p50=p50,
        p90=p90,
        mean=round(float(tco.mean()), 2),
        histogram=histogram(tco),
        deadline_missed=missed_share,
        shortfall=round(float(anywhere.mean()), 4) if draws.n else 0.0,
        shortfall_by_workload={w: round(float(v.mean()), 4) for w, v in lacking.items()},
    )


HELD = (
    "prices without a catalogue range (racks, power, bandwidth, cloud, network, storage) "
    "are held at their figures; a shortfall of demand is a share of draws, not priced"
)


def assess(
    plan: Plan, reqs: Requirements, catalog: Catalog, n: int, seed: int
) -> tuple[Draws, Risk]:
    """The draws and the chosen plan re-priced over them (`--risk N` without --replan)."""
    wanted = needs(reqs)
    draws = draw(
        n,
        seed,
        price_ranges(plan, catalog),
        plan_cards(plan),
        workloads=[w.workload for w in wanted],
    )
    deadlines = {w.name: w.deadline_hours for w in reqs.workloads if w.deadline_hours}
    late = round(float(missed(plan, draws, deadlines).mean()), 4)
    runs = {w.workload: w.figure for w in wanted if w.unit == "runs"}
    tco = reprice(plan, draws, runs)
    return draws, summary(tco, draws, late, HELD, short(plan, draws, wanted), wanted)


# ------------------------------------------------------------------ re-planning each draw


@dataclass(frozen=True)
class DrawTask:
    """One draw to plan again: the base instance, the draw's factors, the base plan as a
    hint. `analyse` runs in a pool worker (inputs from the fork) or a Ray worker (inputs
    read again from the run's files)."""

    index: int
    instance: Instance
    hint: Solution
    servers: tuple[tuple[str, float], ...]
    cards: tuple[tuple[str, float], ...]
    config: SolveConfig
    demand: tuple[tuple[str, float], ...] = ()

    def analyse(self, inputs: Any) -> tuple[int, str, float | None, Any]:
        from gpusolve.analyses.sensitivity import probe_solve
        from gpusolve.candidates.layout_memo import shared_layouts
        from gpusolve.candidates.scaling import scale_instance

        with shared_layouts(_RECENT_LAYOUTS):
            instance = draw_instance(self.instance, inputs, self.cards, self.demand)
        for server, factor in self.servers:  # options generated again first, then prices
            if server in instance.skus:
                instance = scale_instance(instance, "server_price", server, factor)
        solution = probe_solve(instance, self.config, self.hint)
        key = plan_key(solution, instance)
        tco = float(solution.costs.tco) if solution.costs is not None else None
        return self.index, describe(key, ((), (), ())), tco, key


class Recent(OrderedDict[Any, Any]):
    """A mapping that keeps its `limit` most recently used entries (read or written)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


# The layout searches a process's draws share: a draw's searches whose inputs no draw moves
# (a training workload on a card not drawn: runs do not enter a search) are answered from
# here after the first draw; those a draw moves (a drawn card's, a service at its drawn
# demand) are new each draw and age out. A search's answer is the same whether memoised or
# not, so a seed gives the same figures on any pool or cluster.
_RECENT_LAYOUTS = Recent(limit=1024)
# A drawn card at a drawn efficiency, one object per (card, efficiency) in a process: the
# layout memo knows a card by identity, so a repeated efficiency must be the same card.
_SCALED_CARDS: dict[tuple[str, float], tuple[Catalog, Card]] = {}


def scaled_card(catalog: Catalog, card: str, factor: float) -> Card:
    """`card` of `catalog` at `factor` x its modelled speed, the same object each time."""
    if factor == 1.0:
        return catalog.cards[card]
    found = _SCALED_CARDS.get((card, factor))
    if found is None or found[0] is not catalog:
        found = _SCALED_CARDS[(card, factor)] = (catalog, scale_card(catalog.cards[card], factor))
    return found[1]


def draw_instance(
    base: Instance,
    inputs: CandidateInputs,
    cards: Sequence[tuple[str, float]],
    demand: Sequence[tuple[str, float]],
) -> Instance:
    """The instance of one draw: with a drawn demand, every option generated again from the
    requirements at the drawn demand on the catalogue at the drawn efficiencies (within a
    process, the layout searches no draw moves are answered from the memo); without, only
    the options on the drawn cards (`card_instance`)."""
    from gpusolve.candidates.prepare import prepare
    from gpusolve.candidates.scaling import card_instance

    if not demand:
        instance = base
        for card, factor in cards:
            instance = card_instance(instance, inputs, card, factor)
        return instance
    catalog = inputs.catalog
    scaled = {k: scaled_card(catalog, k, f) for k, f in cards if k in catalog.cards}
    catalog = catalog.model_copy(update={"cards": {**catalog.cards, **scaled}})
    reqs = with_demand(inputs.reqs, dict(demand))
    return prepare(reqs, catalog, inputs.policies).cand.instance


def draw_tasks(
    instance: Instance, hint: Solution, draws: Draws, config: SolveConfig
) -> list[DrawTask]:
    return [
        DrawTask(
            i,
            instance,
            hint,
            tuple(zip(draws.servers, map(float, draws.server_factors[i]), strict=True)),
            tuple(zip(draws.cards, map(float, draws.card_factors[i]), strict=True)),
            config,
            tuple(zip(draws.workloads, map(float, draws.demand_factors[i]), strict=True)),
        )
        for i in range(draws.n)
    ]


def replan_config(config: SolveConfig) -> SolveConfig:
    """One worker and no wall clock: the work limit alone stops a solve, so a draw gives
    the same plan on any machine, loaded or not, pool or cluster."""
    return replace(config, workers=1, time_limit_s=float("inf"))


def on_pool(tasks: Sequence[DrawTask], workers: int, inputs: Any) -> list[Any]:
    """The draws over the local process pool (inputs through the fork, as the sensitivity's)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from gpusolve.analyses import pool

    if workers <= 1 or len(tasks) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        try:
            return [t.analyse(inputs) for t in tasks]
        finally:  # this process goes on: its memory is not the sweep's to keep
            _RECENT_LAYOUTS.clear()
            _SCALED_CARDS.clear()
    executor = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=pool._adopt,
        initargs=(inputs, os.getpid()),
    )
    with executor, pool._forking():
        return list(executor.map(pool._pooled, tasks))


def replanned(results: Sequence[Any], n: int) -> list[RiskPlan]:
    """The plans the draws chose, most often first (then by mean TCO, then in words)."""
    won: dict[str, list[float]] = {}
    for _index, words, tco, _key in results:
        if tco is not None:
            won.setdefault(words, []).append(tco)
    ranked = sorted(won.items(), key=lambda kv: (-len(kv[1]), sum(kv[1]) / len(kv[1]), kv[0]))
    return [
        RiskPlan(
            plan=words,
            share=round(len(tcos) / n, 4),
            draws=len(tcos),
            mean_tco=round(sum(tcos) / len(tcos), 2),
        )
        for words, tcos in ranked
    ]


# A draw's re-solve stops at this much CP-SAT deterministic time (about a second of one
# core on an idle machine each): hinted with the plan, a draw that keeps the plan proves
# it fast; a bound in work, not in wall time, keeps a seed's figures the same on any load.
REPLAN_WORK_LIMIT = 10.0


@dataclass(frozen=True)
class RiskRequest:
    draws: int
    seed: int
    replan: bool = False
    cluster: Cluster | None = None  # None: the local pool
    workers: int | None = None


def run(solved: Solved, request: RiskRequest) -> Plan:
    """The plan with its `risk`: re-priced over the draws, and each draw re-planned with
    `replan`. Raises ValueError for what --replan cannot do (a schedule, a hedged plan)."""
    from gpusolve.analyses.pool import default_workers
    from gpusolve.plan.solved import Single

    plan = solved.single_plan
    if plan.cost is None:
        return plan
    reqs = solved.run.reqs
    draws, risk = assess(plan, reqs, solved.run.catalog, request.draws, request.seed)
    if request.replan:
        single = solved.solution
        if not isinstance(single, Single) or single.solution is None:
            raise ValueError("--replan re-plans a single plan: this one is hedged over scenarios")
        config = replace(replan_config(solved.options.config), work_limit=REPLAN_WORK_LIMIT)
        tasks = draw_tasks(single.instance, single.solution, draws, config)
        if request.cluster is not None:
            results = request.cluster.run(tasks)
            where = request.cluster.name
        else:
            workers = request.workers or default_workers()
            inputs = CandidateInputs(reqs, solved.run.catalog, solved.run.policies)
            results = on_pool(tasks, workers, inputs)
            where = f"local process pool ({min(workers, len(tasks))} workers)"
        risk = risk.model_copy(update={"replanned": replanned(results, draws.n), "ran_on": where})
    return plan.model_copy(update={"risk": risk})
