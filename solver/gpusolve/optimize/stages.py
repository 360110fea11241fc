"""The lexicographic order of a plan's criteria, and how it is folded into solves.

The order: the objective; then, unless the objective already is TCO, TCO plus penalties
(a budget-constrained throughput plan should not waste money, a min-capex plan should not
pick the dearer of two equal-capex plans); then the tie-breaks that make the plan unique
and stable: fewer racks, more memory headroom, fewer servers, and a deterministic rank
(input order of options and fills).

Consecutive criteria are folded into one integer objective while the weights stay below
`Tuning.fold_limit`: each weight exceeds the whole range of the criteria after it, so the
folded optimum is the lexicographic one and the leading criterion stays exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize.builder import Expr
from gpusolve.optimize.model import Built
from gpusolve.optimize.tuning import DEFAULT


def primary(built: Built) -> tuple[Expr, bool]:
    """The stage-1 objective and whether it is maximised.

    Penalties are money-equivalent soft-rule costs, so every money objective includes them.
    min-capex counts cloud rental as spend (otherwise renting would look free);
    min-monthly is the whole-horizon spend other than purchases (horizon x monthly).
    """
    kind = built.instance.objective
    if kind == "max-throughput":
        return built.throughput, True
    if kind == "min-capex":
        return built.capex + built.cloud_cost + built.penalties, False
    if kind == "min-monthly":
        return built.opex + built.penalties, False
    return built.net_cost + built.penalties, False


@dataclass(frozen=True)
class Criterion:
    """One lexicographic criterion with the range its expression can take."""

    name: str
    expr: Expr
    maximise: bool
    lo: int
    hi: int

    @property
    def span(self) -> int:
        return self.hi - self.lo

    def normalised(self) -> Expr:
        """Non-negative, to be minimised, at most `span`."""
        return self.hi - self.expr if self.maximise else self.expr - self.lo


def expr_range(expr: Expr, domains: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Bounds of a linear expression from its variables' domains (`var_bounds`)."""
    flat = cmh.FlatIntExpr(expr)
    lo = hi = flat.offset
    for var, coef in zip(flat.vars, flat.coeffs, strict=True):
        first, last = domains[var.index]
        a, b = coef * first, coef * last
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def var_bounds(model: cp_model.CpModel) -> list[tuple[int, int]]:
    """(lowest, highest) value of every variable, by proto index. Read once per model:
    each access to a proto field crosses into C++, and reading them per term of every
    criterion is several times slower."""
    bounds: list[tuple[int, int]] = []
    for var in model.proto.variables:
        # len() rather than [-1]: the pybind repeated field silently answers 0 to [-1].
        domain = var.domain
        bounds.append((domain[0], domain[len(domain) - 1]))
    return bounds


def criteria(built: Built) -> list[Criterion]:
    """The full lexicographic order: the objective, then (unless it is already TCO) TCO
    plus penalties, then the tie-breaks: fewer racks, more memory headroom, fewer
    servers, earlier-listed options and fills."""
    objective, maximise = primary(built)
    items: list[tuple[str, Expr, bool]] = [(built.instance.objective, objective, maximise)]
    if built.instance.objective != "min-tco":
        items.append(("tco", built.net_cost + built.penalties, False))
    items += [
        ("racks", built.racks_total, False),
        ("headroom", built.headroom, True),
        ("servers", built.servers_total, False),
        ("rank", built.rank, False),
    ]
    domains = var_bounds(built.model)
    return [Criterion(n, e, m, *expr_range(e, domains)) for n, e, m in items]


def group(items: Sequence[Criterion], limit: int = DEFAULT.fold_limit) -> list[list[Criterion]]:
    """Split the order into solves: consecutive criteria share one folded objective while
    the product of their (span + 1) stays below `limit`, so weights stay exact in int64."""
    groups: list[list[Criterion]] = []
    scale = limit + 1
    for item in items:
        if groups and scale * (item.span + 1) <= limit:
            groups[-1].append(item)
            scale *= item.span + 1
        else:
            groups.append([item])
            scale = item.span + 1
    return groups


def fold(items: Sequence[Criterion]) -> tuple[Expr, list[int]]:
    """One objective to minimise whose optimum is the lexicographic optimum of `items`:
    each criterion's weight exceeds the whole range of those after it. Returns it with
    the weights."""
    weights: list[int] = []
    weight = 1
    for item in reversed(items):
        weights.append(weight)
        weight *= item.span + 1
    weights.reverse()
    total: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for item, w in zip(items, weights, strict=True):
        total = total + w * item.normalised()
    return total, weights


_TIEBREAKS = frozenset({"racks", "headroom", "servers", "rank"})


def tiebreak_only(items: Sequence[Criterion]) -> bool:
    return all(item.name in _TIEBREAKS for item in items)


def purchase(built: Built, solver: cp_model.CpSolver) -> list[tuple[Expr, int]]:
    """What a plan buys and rents: servers per (SKU, site), sites used, racks per site.

    Tie-breaks that did not fit into the first solve's folded objective are settled with
    the purchase fixed. Searching every plan of equal cost for them instead needs a
    proof over the whole optimal face, often far longer than proving the cost; with the
    purchase fixed it is a small search. Money ties between different purchases are rare
    with real prices; ties between parallelism variants, slot assignments and rack fills
    of one purchase are the common ones, and those are settled exactly.
    """
    fixed: list[tuple[Expr, int]] = []
    fixed += [(v, int(solver.value(v))) for v in built.servers.values()]
    fixed += [(v, int(solver.value(v))) for v in built.used.values()]
    fixed += [(p.total, int(solver.value(p.total))) for p in built.packing.values()]
    return fixed
