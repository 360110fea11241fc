"""Owned servers in a schedule: kept at their site, moved to another, or sold at the start.

As the single plan (`optimize/inventory.py`): kept[k@s] <= the q owned at s serve there;
moved[k,s->t] (a line with a move cost) serve at t, each paying its cost once at the start
(on period 0's rack rent, a colocation charge); the rest are sold at their resale price
(a credit apart from the TCO) or left idle. Owned servers of a model that could serve at a
site are all kept or moved before one is bought for it (a Bool full[k@t]).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ortools.sat.python import cp_model

from gpusolve.optimize.builder import Var, wsum
from gpusolve.optimize.ir import Stock


def add_stock(
    m: cp_model.CpModel,
    stock: Mapping[tuple[str, str], Stock],
    need: Mapping[tuple[str, str], int],
    buy: Mapping[tuple[str, str, int], Var],
    kept: dict[tuple[str, str], Var],
    exprs: dict[str, Any],
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str, str], Var]]:
    """kept, moved, resale and the owned-first rows; returns the owned servers available
    per (sku, site) (kept there plus moved in). `need`: the most in service per key."""
    moved: dict[tuple[str, str, str], Var] = {}
    for (k, src), line in sorted(stock.items()):
        if line.move_cost is None:
            continue
        for k2, dst in sorted(need):
            if k2 == k and dst != src:
                moved[k, src, dst] = m.new_int_var(0, line.count, f"moved[{k}:{src}->{dst}]")
    out_of: dict[tuple[str, str], list[Var]] = defaultdict(list)
    owned_at: dict[tuple[str, str], Any] = defaultdict(int)
    for (k, src, dst), var in moved.items():
        out_of[k, src].append(var)
        owned_at[k, dst] += var
    resale: Any = 0
    for key, held in sorted(stock.items()):
        here = m.new_int_var(0, held.count, f"kept[{key[0]}@{key[1]}]")
        kept[key] = here
        owned_at[key] += here
        taken = here + sum(out_of[key])
        m.add(taken <= held.count)
        resale = resale + held.resale * (held.count - taken)
    purchases: dict[tuple[str, str], list[Var]] = defaultdict(list)
    for (k, s, _q), x in buy.items():
        purchases[k, s].append(x)
    for key, bought in sorted(purchases.items()):
        lines = [
            line
            for line in stock.values()
            if line.sku == key[0] and (line.site == key[1] or (key[0], line.site, key[1]) in moved)
        ]
        if not lines:
            continue
        full = m.new_bool_var(f"full[{key[0]}@{key[1]}]")
        m.add(sum(bought) <= need[key] * full)
        for line in lines:
            at = (line.sku, line.site)
            m.add(kept[at] + sum(out_of[at]) >= line.count * full)
    exprs["resale"] = resale
    # Moving is a colocation charge paid at the start: on period 0's rack rent.
    exprs["moves"] = wsum([(stock[(k, src)].move_cost or 0, v) for (k, src, _), v in moved.items()])
    return owned_at, moved
