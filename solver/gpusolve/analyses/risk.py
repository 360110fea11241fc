"""`plan --risk N`: the chosen plan over N draws of an uncertain world.

What is drawn (numpy's PCG64 generator, seeded by `--seed`, the draws in a fixed order so
a seed gives the same world on any machine and any pool):
- each server's price, for servers with a `price_range` in the catalogue: triangular
  between the range's low and high with its mode at the catalogue price (the price the
  plan used is the likeliest, the range its sources give the ends);
- each card's efficiency (speed against the modelled speed), for the cards the plan runs
  on: uniform within +-20%, the gate the serving model is validated at against
  TensorRT-LLM's published tables (benchmarks/README.md, "Serving at load": all 20 within
  it, at +3% to +19%).
Prices without a range (racks, power, bandwidth, cloud, network) are held: the catalogue
gives no range to draw from. Demand is held at the requirements' figures: they state no
range for it (a `scenarios:` block hedges demand in the two-stage plan instead).

Re-pricing (the default, vectorised): the plan's hardware held, its TCO per draw is its
TCO plus each server line times (drawn / catalogue price - 1) and each hourly cloud line
times (1 / efficiency - 1), a slower card renting for longer; a training run slower than
its deadline allows counts as missed. With `--replan` each draw is planned again (the
plan's instance with the draw's prices and efficiencies, solved with the plan as a hint),
on the local process pool or on a Ray cluster (`analyses/cluster.py`); each draw is one
deterministic solve, so a seed gives the same figures on either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusolve.analyses.cluster import Cluster
from gpusolve.analyses.probing import describe, plan_key
from gpusolve.explain.payments import is_credit, rented_by, spend
from gpusolve.models.catalog import Catalog
from gpusolve.models.money import HistogramBin, Risk, RiskPlan
from gpusolve.models.plan import Plan
from gpusolve.optimize.ir import Instance, Solution, SolveConfig

if TYPE_CHECKING:
    from gpusolve.plan.solved import Solved

# Card efficiency: +-20%, the serving model's validation gate (benchmarks/README.md).
EFFICIENCY_BAND = 0.20
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class Draws:
    """N draws: per server, drawn price / catalogue price; per card, drawn efficiency."""

    seed: int
    servers: tuple[str, ...]
    server_factors: np.ndarray[Any, Any]  # (n, servers)
    cards: tuple[str, ...]
    card_factors: np.ndarray[Any, Any]  # (n, cards)

    @property
    def n(self) -> int:
        return int(self.server_factors.shape[0])


def draw(
    n: int,
    seed: int,
    price_ranges: Mapping[str, tuple[float, float, float]],
    cards: Sequence[str],
    band: float = EFFICIENCY_BAND,
) -> Draws:
    """`n` draws: each server's price triangular (low, catalogue price, high), as a factor
    of the catalogue price; each card's efficiency uniform in [1 - band, 1 + band]."""
    rng = np.random.Generator(np.random.PCG64(seed))
    servers = tuple(sorted(price_ranges))
    factors = np.ones((n, len(servers)))
    for j, server in enumerate(servers):
        low, mode, high = price_ranges[server]
        if high > low:
            factors[:, j] = rng.triangular(low, mode, high, n) / mode
    names = tuple(sorted(cards))
    efficiency = rng.uniform(1 - band, 1 + band, (n, len(names)))
    return Draws(seed, servers, factors, names, efficiency)


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


def reprice(plan: Plan, draws: Draws) -> np.ndarray[Any, Any]:
    """The plan's TCO in every draw, its hardware held (see the module's docstring)."""
    assert plan.cost is not None
    tco = np.full(draws.n, spend(plan.cost))
    server_at = {s: j for j, s in enumerate(draws.servers)}
    card_at = {c: k for k, c in enumerate(draws.cards)}
    for item in plan.cost.breakdown.items:
        if is_credit(item) or not item.amount:
            continue
        if item.kind == "servers_capex" and item.subject in server_at:
            tco += item.amount * (draws.server_factors[:, server_at[item.subject]] - 1)
        elif item.kind == "cloud_rental" and item.unit == "instance-hour":
            d = rented_by(item, plan.deployments)
            if d is not None and d.card in card_at:
                tco += item.amount * (1 / draws.card_factors[:, card_at[d.card]] - 1)
    return tco


def missed(plan: Plan, draws: Draws, deadlines_h: Mapping[str, float]) -> np.ndarray[Any, Any]:
    """Per draw, whether a training run of the plan misses its deadline once its card's
    efficiency draw slows or speeds it."""
    out = np.zeros(draws.n, dtype=bool)
    card_at = {c: k for k, c in enumerate(draws.cards)}
    for d in plan.deployments:
        limit = deadlines_h.get(d.workload)
        if d.time_to_train_h is None or not limit or d.card not in card_at:
            continue
        out |= d.time_to_train_h / draws.card_factors[:, card_at[d.card]] > limit
    return out


def histogram(tco: np.ndarray[Any, Any], bins: int = HISTOGRAM_BINS) -> list[HistogramBin]:
    counts, edges = np.histogram(tco, bins=bins)
    return [
        HistogramBin(low=float(edges[i]), high=float(edges[i + 1]), draws=int(c))
        for i, c in enumerate(counts)
    ]


def summary(tco: np.ndarray[Any, Any], draws: Draws, missed_share: float, held: str) -> Risk:
    """P10/P50/P90 (numpy's linear interpolation between order statistics), the mean and
    the histogram of `tco`."""
    p10, p50, p90 = (round(float(v), 2) for v in np.percentile(tco, [10, 50, 90]))
    told = [
        f"price of {s}: triangular between its catalogue price_range ends, mode at its price"
        for s in draws.servers
    ]
    told += [
        f"efficiency of {c}: uniform within +-{EFFICIENCY_BAND:.0%} of the modelled speed "
        "(the serving model's validation gate, benchmarks/README.md)"
        for c in draws.cards
    ]
    return Risk(
        draws=draws.n,
        seed=draws.seed,
        distributions=told,
        held=held,
        p10=p10,
        p50=p50,
        p90=p90,
        mean=round(float(tco.mean()), 2),
        histogram=histogram(tco),
        deadline_missed=missed_share,
    )


HELD = (
    "prices without a catalogue range (racks, power, bandwidth, cloud, network, storage) "
    "and demand (the requirements state no range) are held at their figures"
)


def reprice_risk(
    plan: Plan, catalog: Catalog, deadlines_h: Mapping[str, float], n: int, seed: int
) -> Risk:
    """`--risk N` without --replan: the chosen plan re-priced over `n` draws."""
    draws = draw(n, seed, price_ranges(plan, catalog), plan_cards(plan))
    late = missed(plan, draws, deadlines_h)
    return summary(reprice(plan, draws), draws, round(float(late.mean()), 4), HELD)


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

    def analyse(self, inputs: Any) -> tuple[int, str, float | None, Any]:
        from gpusolve.analyses.sensitivity import probe_solve
        from gpusolve.candidates.scaling import card_instance, scale_instance

        instance = self.instance
        for card, factor in self.cards:  # options generated again first, then prices
            instance = card_instance(instance, inputs, card, factor)
        for server, factor in self.servers:
            if server in instance.skus:
                instance = scale_instance(instance, "server_price", server, factor)
        solution = probe_solve(instance, self.config, self.hint)
        key = plan_key(solution, instance)
        tco = float(solution.costs.tco) if solution.costs is not None else None
        return self.index, describe(key, ((), (), ())), tco, key


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
        return [t.analyse(inputs) for t in tasks]
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
    from gpusolve.candidates.scaling import CandidateInputs
    from gpusolve.plan.solved import Single

    plan = solved.single_plan
    if plan.cost is None:
        return plan
    reqs = solved.run.reqs
    deadlines = {w.name: w.deadline_hours for w in reqs.workloads if w.deadline_hours}
    draws = draw(
        request.draws, request.seed, price_ranges(plan, solved.run.catalog), plan_cards(plan)
    )
    late = float(missed(plan, draws, deadlines).mean())
    risk = summary(reprice(plan, draws), draws, round(late, 4), HELD)
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
