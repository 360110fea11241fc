"""One parameter's range: how far a factor on it may move before the plan changes.

Geometric steps away from 1 (x`STEP` per step, out to the parameter's limits), then
bisection between the last factor that keeps the plan and the first that changes it, to
`REL_TOL`. "Same plan" compares what is bought, placed and rented (`plan_key`): per
workload the server SKU and count with the site, or the cloud offer and instance count,
plus servers per (SKU, site) and racks per site; never the TCO, which moves with the
price. A hedged plan's key is its purchase, then each scenario's key (`hedged_key`).

The optimal set of one parameter's factor is an interval when the parameter is a cost
coefficient (each plan's objective is linear in it), which is what makes bisection sound;
for efficiency it is what is searched for, within `EFFICIENCY_LIMITS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpusolve.models.plan import SensitivityKind, SensitivityRange
from gpusolve.optimize.ir import Instance, Solution, rentals

if TYPE_CHECKING:
    from gpusolve.optimize.twostage import solve as twostage


# Prices are searched from a tenth to ten times their catalogue value: beyond that a quote
# is a different product, and the user multiplied cloud prices by 5 by hand.
PRICE_LIMITS = (0.1, 10.0)


# Efficiency: H12's healthy MFU band is 40-60 %, so a model off by half either way is
# already outside it; a GEMM fraction cannot pass the peak, so 1.5x is near the ceiling
# for the best-modelled families (Hopper 0.80 x 0.8 = 64 % of peak).
EFFICIENCY_LIMITS = (0.5, 1.5)


STEP = 2.0  # geometric step away from 1 before the bisection


REL_TOL = 0.01  # the switch point to within 1 % of the factor


PlanKey = tuple[tuple[Any, ...], ...]


NO_PLAN: PlanKey = (("no plan",),)


NOT_FOUND: PlanKey = (("no plan found in time",),)


@dataclass(frozen=True)
class Parameter:
    """One price or assumption, as the user reads it."""

    kind: SensitivityKind
    subject: str  # catalogue id (server, colo offer, cloud offer) or card
    words: str  # e.g. "price of hgx-h100-8gpu"
    unit: str
    current: float  # the catalogue value (1.0 for an efficiency multiplier)
    # A card the plan does not use: only its upward end is searched. Slower, its options
    # only get dearer and the plan's own are untouched, so the plan stays optimal.
    rival: bool = False

    @property
    def limits(self) -> tuple[float, float]:
        return EFFICIENCY_LIMITS if self.kind == "efficiency" else PRICE_LIMITS


@dataclass(frozen=True)
class Probe:
    """What one re-solve at a factor says."""

    factor: float
    key: PlanKey
    description: str  # the plan, in the words of its changed deployments
    tco: int | None


@dataclass(frozen=True)
class Edge:
    """One end of the range: the last factor that keeps the plan and the first probe that
    does not (None when the plan holds out to the limit)."""

    inside: float
    outside: Probe | None


@dataclass(frozen=True)
class Outcome:
    parameter: Parameter
    low: Edge
    high: Edge
    solves: int


def past_deadline(factor: float, base: PlanKey) -> Probe | None:
    """A probe not searched, once the command's deadline has passed (`--time-limit` is for
    the whole command): no plan found in time, as a search stopped at its limit reads."""
    from gpusolve.optimize import interrupt

    if not interrupt.past_deadline():
        return None
    return Probe(factor, NOT_FOUND, describe(NOT_FOUND, base), None)


def plan_key(solution: Solution, instance: Instance) -> PlanKey:
    """What a plan buys, places and rents: per workload its SKU and server count at its site
    or its cloud offer and instance count, servers per (SKU, site), racks per site."""
    if not solution.choices or solution.fallback is not None:
        # A fallback (all-rent, greedy) is what a search stopped at its limit answers
        # with, not the plan the instance leads to: as good as no plan found.
        return NO_PLAN if solution.status == "infeasible" else NOT_FOUND
    owned = {o.key: o for o in instance.owned}
    choices: list[tuple[Any, ...]] = []
    for c in solution.choices:
        if c.option in owned:
            o = owned[c.option]
            choices.append((c.workload, "own", o.sku, o.servers, c.site or ""))
    # Rentals, a split service's burst among them (its base is the owned choice above).
    for c, r in rentals(solution, instance):
        choices.append((c.workload, "rent", r.offer, r.instances, ""))
    servers = tuple(sorted((sku, site, n) for (sku, site), n in solution.servers.items() if n))
    racks: dict[str, int] = {}
    for (site, _), n in solution.racks.items():
        racks[site] = racks.get(site, 0) + n
    return (
        tuple(sorted(choices)),
        servers,
        tuple(sorted((site, n) for site, n in racks.items() if n)),
    )


def describe(key: PlanKey, base: PlanKey) -> str:
    """The plan `key` in words, naming only the deployments that differ from `base`."""
    if key == NO_PLAN:
        return "no feasible plan"
    if key == NOT_FOUND:
        return "no plan found within the time limit (none proven impossible)"
    mine = {c[0]: c for c in base[0]} if base not in (NO_PLAN, NOT_FOUND) else {}
    parts = []
    for w, mode, what, count, site in key[0]:
        if mine.get(w) == (w, mode, what, count, site):
            continue
        if mode == "rent":
            parts.append(f"{w}: rent {count} x {what}")
        else:
            parts.append(f"{w}: {count} x {what} at {site}")
    if parts:
        return "; ".join(parts)
    return "same deployments, different servers or racks: " + ", ".join(
        f"{n} x {sku} at {site}" for sku, site, n in key[1]
    )


SolveAt = Callable[[float], Probe]


def find_edge(
    solve_at: SolveAt, base: PlanKey, limit: float, step: float = STEP, rel_tol: float = REL_TOL
) -> tuple[Edge, int]:
    """The end of the range towards `limit` (below or above 1) and the solves it took.

    Geometric steps of `step` from 1 until the plan changes or the limit is reached, then
    bisection (geometric midpoints) until the last factor that keeps the plan and the first
    that changes it are within `rel_tol` of each other."""
    up = limit > 1.0
    inside = 1.0
    solves = 0
    outside: Probe | None = None
    factor = 1.0
    while (factor < limit) if up else (factor > limit):
        factor = min(factor * step, limit) if up else max(factor / step, limit)
        probe = solve_at(factor)
        solves += 1
        if probe.key != base:
            outside = probe
            break
        inside = factor
    if outside is None:
        return Edge(inside, None), solves
    while abs(outside.factor / inside - 1.0) > rel_tol:
        mid = math.sqrt(inside * outside.factor)
        probe = solve_at(mid)
        solves += 1
        if probe.key == base:
            inside = mid
        else:
            outside = probe
    return Edge(inside, outside), solves


def both_ends(
    parameter: Parameter, solve_at: SolveAt, base_key: PlanKey, rel_tol: float = REL_TOL
) -> Outcome:
    lo_limit, hi_limit = parameter.limits
    low, n_low = Edge(lo_limit, None), 0  # a rival slower: provably the same plan
    if not parameter.rival:
        low, n_low = find_edge(solve_at, base_key, lo_limit, rel_tol=rel_tol)
    high, n_high = find_edge(solve_at, base_key, hi_limit, rel_tol=rel_tol)
    return Outcome(parameter, low, high, n_low + n_high)


def _value(current: float, factor: float) -> float:
    """A factor as a value, to 6 significant digits: the bisection's 1 % is far coarser,
    and 9.600000000000001 reads as noise."""
    return float(f"{current * factor:.6g}")


def to_range(outcome: Outcome) -> SensitivityRange:
    p = outcome.parameter
    lo_limit, hi_limit = p.limits
    low, high = outcome.low, outcome.high
    return SensitivityRange(
        kind=p.kind,
        subject=p.subject,
        parameter=p.words,
        unit=p.unit,
        current=p.current,
        low=None if low.outside is None else _value(p.current, low.inside),
        high=None if high.outside is None else _value(p.current, high.inside),
        searched_low=_value(p.current, lo_limit),
        searched_high=_value(p.current, hi_limit),
        below=None if low.outside is None else low.outside.description,
        above=None if high.outside is None else high.outside.description,
        below_tco=None if low.outside is None else low.outside.tco,
        above_tco=None if high.outside is None else high.outside.tco,
    )


def hedged_key(result: twostage.TwoStageResult, scenarios: Sequence[twostage.Scenario]) -> PlanKey:
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
    return f"buys {purchase_words(key)}; {words}"


def purchase_words(key: PlanKey) -> str:
    return ", ".join(f"{n} x {sku} at {site}" for sku, site, n in key[0]) or "nothing"
