"""Bounds on what taking a choice adds to the LP bound, from its site's own LP.

The core search (`core.py`) bounds every plan that takes a choice by L + the choice's rank,
read from the whole LP's reduced costs. At a site the LP leaves closed those are weak: the
LP's optimum is degenerate there (every variable of the site is 0), and GLOP's duals spread
the site's fixed costs, its used flag and its racks, over rows that charge one placement
next to nothing.

Keeping one site's own rows (those over its variables alone) out of the Lagrangian and
pricing every other row at the LP's duals y gives, for every plan x,

    objective(x) >= L - local(s) + min { d'.x_s : x_s meets the site's rows }

with d' the reduced costs of the site's variables counting only the other rows, and
local(s) the part of L the site's rows and variables made up. A plan that takes a choice
at the site also has the used flag at 1 and at least one whole rack there, so the minimum
may require both: an LP over one site's variables (a few thousand, milliseconds). Its own
Lagrangian bound is taken, with its reduced costs: the choice's, and those of what the
choice forces (`core.forced`), add to the site's rise as in `core.ranked`. GLOP's
tolerances cannot make either invalid, since both hold for any multipliers. Why: the cores
holding every choice within a given distance of L shrink several-fold
(`benchmarks/README.md`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.linear_solver import linear_solver_pb2
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize.builder import OwnedVar
from gpusolve.optimize.model import Built
from gpusolve.optimize.search.core import forced, raising_cost
from gpusolve.optimize.search.relaxation import (
    SAFETY,
    LpSolution,
    Relaxation,
    binding_side,
    glop,
    lagrangian,
)


@dataclass(frozen=True)
class Opening:
    """How much more than L a plan costs at least, by choice (proto index) it takes and by
    site it uses. Sites not reached in time, or whose LP GLOP did not solve, are absent."""

    choices: dict[int, float] = field(default_factory=dict)
    sites: dict[str, float] = field(default_factory=dict)


def bounds(relax: Relaxation, built: Built, lp: LpSolution, time_s: float) -> Opening:
    """Each site's opening bound, and each choice's: its site's, plus what the site's own
    LP charges for the choice and what it forces (`core.forced`), where positive. Sites
    not reached within `time_s` are left out."""
    stop = time.perf_counter() + time_s
    members = {
        site: [var.index for var in variables] for site, variables in built.site_vars().items()
    }
    site_of = {index: site for site, indices in members.items() for index in indices}
    rows = _local_rows(relax.lp, site_of)
    choices: dict[str, list[OwnedVar]] = defaultdict(list)
    for o in built.owned:
        choices[o.placement.site].append(o)
    by_site: dict[str, float] = {}
    by_choice: dict[int, float] = {}
    for site in sorted(members):
        if time.perf_counter() >= stop:
            break
        priced = _site_lp(
            relax.lp, built, lp, site, members[site], rows.get(site, []), stop, relax.parameters
        )
        if priced is None:
            continue
        by_site[site] = priced[0]
        by_choice |= _rises(built, site, choices[site], *priced)
    return Opening(by_choice, by_site)


def _rises(
    built: Built,
    site: str,
    choices: Sequence[OwnedVar],
    opened: float,
    reduced: dict[int, float],
    low: dict[int, float],
) -> dict[int, float]:
    """The site's choices with their positive bounds, from its LP's opening bound, reduced
    costs and lower bounds (`_site_lp`)."""

    out: dict[int, float] = {}
    by_shape: dict[tuple[str, int], float] = {}  # what a (SKU, servers) forces
    for o in choices:
        shape = (o.option.sku, o.option.servers)
        if shape not in by_shape:
            by_shape[shape] = raising_cost(
                forced(built, site, *shape), reduced.__getitem__, low.__getitem__
            )
        own = raising_cost([(o.var.index, 1)], reduced.__getitem__, low.__getitem__)
        rise = opened + (own + by_shape[shape]) * (1 - SAFETY)
        if rise > 0:
            out[o.var.index] = rise
    return out


def _local_rows(
    lp: linear_solver_pb2.MPModelProto, site_of: dict[int, str]
) -> dict[str, list[int]]:
    """LP rows over the variables of one site alone, by site."""
    out: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(lp.constraint):
        sites = {site_of.get(var) for var in row.var_index}
        if len(sites) == 1:
            (site,) = sites
            if site is not None:
                out[site].append(index)
    return dict(out)


def _site_lp(
    lp: linear_solver_pb2.MPModelProto,
    built: Built,
    solution: LpSolution,
    site: str,
    variables: Sequence[int],
    rows: Sequence[int],
    stop: float,
    parameters: str,
) -> tuple[float, dict[int, float], dict[int, float]] | None:
    """What every plan using the site adds to L at least (see the module docstring), and
    the site LP's reduced costs and lower bounds by proto index; None when GLOP does not
    solve it."""
    position = {index: k for k, index in enumerate(variables)}
    cost = {index: solution.reduced_costs[index] for index in variables}
    local = 0.0  # what the site's rows and variables add to L
    magnitude = 0.0
    sub = linear_solver_pb2.MPModelProto()
    for index in rows:
        row, y = lp.constraint[index], solution.duals[index]
        side = binding_side(row, y)
        if side is not None:
            # Put the row back into its variables' costs: it is kept as a row below.
            local += y * side
            magnitude += abs(y * side)
            for var, coef in zip(row.var_index, row.coefficient, strict=True):
                cost[var] += y * coef
        copy = sub.constraint.add(lower_bound=row.lower_bound, upper_bound=row.upper_bound)
        copy.var_index.extend(position[var] for var in row.var_index)
        copy.coefficient.extend(row.coefficient)
    for index in variables:
        var, d = lp.variable[index], solution.reduced_costs[index]
        local += min(d * var.lower_bound, d * var.upper_bound)
        magnitude += abs(d) * max(abs(var.lower_bound), abs(var.upper_bound))
        sub.variable.add(
            lower_bound=var.lower_bound,
            upper_bound=var.upper_bound,
            objective_coefficient=cost[index],
        )
    # What every plan using the site has: the used flag set, and a whole rack at least
    # (each choice places a server, and a server needs a rack).
    sub.variable[position[built.used[site].index]].lower_bound = 1
    racks = cmh.FlatIntExpr(built.packing[site].total)
    rack_row = sub.constraint.add(lower_bound=1 - racks.offset, upper_bound=math.inf)
    rack_row.var_index.extend(position[var.index] for var in racks.vars)
    rack_row.coefficient.extend(racks.coeffs)
    response = glop(sub, stop - time.perf_counter(), parameters)
    if response is None:
        return None
    reduced, least = lagrangian(sub, list(response.dual_value))
    by_index = {index: reduced[k] for index, k in position.items()}
    low = {index: sub.variable[k].lower_bound for index, k in position.items()}
    return least - local - SAFETY * magnitude, by_index, low
