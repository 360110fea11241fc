"""Stage 1 on models too large for CP-SAT's own LP: search a growing core of choices, with
the LP relaxation's bound for everything left out.

Why: on the largest models CP-SAT's root LP, a dual simplex, does not finish within the
limit (no cut, no branch, a bound from the unfinished LP). GLOP's primal simplex solves the
same LP in seconds (`relaxation.py`), and its duals give, for every plan x and every
choice j,

    objective(x) >= L + sum_j (d_j x_j - the least d_j x_j can be)      (Lagrangian bound)

with L the LP bound and d_j the reduced costs: a plan that takes a choice with d_j > 0 costs
at least L + d_j. The sum runs over every variable, so a choice's rank r_j adds the terms of
what taking it forces: at a site the LP leaves empty, the used flag, the servers and the
racks (`ranked`); and a rank is at least what the choice's site's own LP says it adds
(`opening.py`), which is far more where the LP leaves the site closed. So stage 1 searches
a core, every choice with r_j <= t plus the hint's, with every other choice fixed to 0: a
core of a few thousand open choices is an LP CP-SAT solves in well under a second, so its
cuts and branching work. For the whole model:

* every plan in the core is worth at least max(B, L), B the core solve's bound;
* every plan outside it at least L + d_out, d_out the least rank left out;

so min(max(B, L), L + d_out) bounds every plan (as does `dichotomy.py`'s bound, taken
before the first core), and the core's optimum C is the optimum
when C < L + d_out (a core holding every choice with r_j <= C - L is exact). Otherwise the
core grows `Tuning.core_growth`-fold, capped at that exact core, and is solved again from
the best plan so far, until the time runs out. A core whose relaxed optimum (before its
rack-packing cuts) already reaches L + d_out can prove nothing more, so it is not solved
again after its cuts (`staged.LazyStages`, `give_up`): its repaired plan is kept and the
next core starts. The measurements are in `benchmarks/README.md`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusolve.optimize.model import Built
from gpusolve.optimize.patterns import racks_alone
from gpusolve.optimize.tuning import DEFAULT

if TYPE_CHECKING:
    # Only the type: the module imports OR-Tools' linear solver (35 ms at start-up).
    from gpusolve.optimize.search.relaxation import LpSolution


@dataclass(frozen=True)
class Core:
    """Choices fixed to 0 in a core solve, and the least reduced cost among them."""

    closed: frozenset[int]
    least_out: float | None  # None when nothing is closed: the core is the whole model

    def bound(self, lp_bound: float, core_bound: float | None) -> float:
        """A bound on the objective of every plan, rounded up (objectives are integral).
        `core_bound`: the core solve's bound on the plans inside it, None when it has
        none (infeasible). Infinite when the core is the whole model and has no plan."""
        inside = math.inf if core_bound is None else max(core_bound, lp_bound)
        least = min(inside, self.outside(lp_bound))
        return math.ceil(least) if math.isfinite(least) else least

    def outside(self, lp_bound: float) -> float:
        """What every plan outside the core costs at least (L + d_out); infinite when the
        core is the whole model."""
        return math.inf if self.least_out is None else lp_bound + self.least_out

    def proves(self, value: int, lp_bound: float) -> bool:
        """Whether a plan optimal within the core is optimal overall: every plan outside
        costs strictly more."""
        return value < self.outside(lp_bound)


def ranked(
    built: Built, lp: LpSolution, floors: Mapping[int, float] | None = None
) -> list[tuple[float, int]]:
    """Every choice variable as (what taking it adds to L at least, proto index), cheapest
    first: its own reduced cost plus that of what it forces (`forced`), or what `floors`
    (proto index -> rise over L, `opening.py`) gives when that is more."""
    floors = floors or {}
    d = lp.reduced_costs
    variables = built.model.proto.variables
    # Lower bounds of the forced variables only (a few thousand): each proto access
    # crosses into C++, and reading one per term is slow on the largest models.
    low: dict[int, int] = {}

    def lower(index: int) -> int:
        if index not in low:
            low[index] = variables[index].domain[0]
        return low[index]

    extra: dict[tuple[str, str, int], float] = {}  # by (site, SKU, servers)
    order = [(d[c.var.index], c.var.index) for c in built.cloud]
    for o in built.owned:
        key = (o.placement.site, o.option.sku, o.option.servers)
        if key not in extra:
            extra[key] = raising_cost(forced(built, *key), d.__getitem__, lower)
        rank = max(d[o.var.index] + extra[key], floors.get(o.var.index, 0.0))
        order.append((rank, o.var.index))
    return sorted(order)


def raising_cost(
    terms: Iterable[tuple[int, int]],
    reduced: Callable[[int], float],
    lower: Callable[[int], float],
) -> float:
    """What the Lagrangian bound charges a plan for raising each variable (proto index) to
    at least its value in `terms`: reduced cost x the rise above its lower bound. Only a
    positive reduced cost counts; a variable with a negative one is charged at its upper
    bound, where raising it costs nothing more."""
    total = 0.0
    for index, least in terms:
        d = reduced(index)
        if d > 0:
            total += d * max(0.0, least - lower(index))
    return total


def forced(built: Built, site: str, sku: str, servers: int) -> list[tuple[int, int]]:
    """(proto index, least value) of the variables a plan must raise when it places a
    workload on `servers` servers of `sku` at `site`: the site's used flag, the SKU's
    servers there, and a relaxed site's racks.

    The Lagrangian bound charges a plan d_v (x_v - l_v) for every variable at its lower
    bound l_v with d_v > 0, not only for its choices, so a choice at a site the LP leaves
    empty also pays for opening it, which keeps the cores about half as large."""
    out = [(built.used[site].index, 1), (built.servers[(sku, site)].index, servers)]
    relaxed = built.packing[site].relaxed
    racks = racks_alone(built.instance.skus[sku], built.instance.sites[site], servers)
    if relaxed is not None and racks is not None:
        out.append((relaxed.racks.index, racks))
    return out


def core(order: Sequence[tuple[float, int]], threshold: float, keep: Collection[int]) -> Core:
    """The core of every choice with reduced cost at most `threshold`, plus `keep`."""
    cut = bisect.bisect_right(order, (threshold, math.inf))
    closed = [(d, index) for d, index in order[cut:] if index not in keep]
    least = min((d for d, _ in closed), default=None)
    return Core(frozenset(index for _, index in closed), least)


def next_threshold(
    order: Sequence[tuple[float, int]],
    current: Core,
    exact: float | None,
    growth: float = DEFAULT.core_growth,
) -> float | None:
    """The threshold of the next core: `growth` (`Tuning.core_growth`) times the open
    choices, capped at `exact` (an incumbent's value minus L: beyond it no choice can
    improve the plan). None when the current core already is the last one."""
    if current.least_out is None or (exact is not None and current.least_out > exact):
        return None
    open_now = len(order) - len(current.closed)
    position = min(len(order), int(growth * max(open_now, 1))) - 1
    # At least the cheapest closed choice opens, whatever the kept choices count for.
    threshold = max(order[position][0], current.least_out)
    return threshold if exact is None else min(threshold, exact)
