"""The inventory in the model: servers already owned and racks already contracted.

Notation. For a (SKU, site) with q servers owned (`Instance.stock`), n[k@s] (the servers in
service there, `model.server_vars`) is made of kept owned servers and bought ones:
buy[k@s] >= 0, 0 <= n - buy <= q. Only `buy` is capex (and residual value); the owned
servers not in service (q - (n - buy)) are sold when a resale price is given, credited on
their own line apart from the TCO (the objective sees the credit), or left idle (powered
off: no rack, no energy). Owned servers are used before any is bought: a Bool full[k@s]
with buy <= ub x full and n - buy >= q x full, so buying one more of a model while
selling one of the same is never a plan (it would only trade at the price spread). A model
the market forbids buying has buy fixed at 0 (export rules apply to purchases, not to stock
already held).

Owned servers may move (`Stock.move_cost` given): moved[k,s->t] of the q owned at s serve
at another site t that hosts servers of SKU k, each paying its move cost once (a colocation
charge, on rent). Then at t, n - buy = the moved-in servers, and at s the servers in
service are used[k@s] <= q - the moved-out ones; the full[k@t] Bool asks every owned server
of that model that could serve at t (the local ones and every movable line) to be in
service or moved before one is bought.

Contracted racks at a site (`Instance.contracts`): c racks whose rent is paid for m months
of the horizon h. Of the racks the site needs, covered[s] <= min(R, c) come from the
contract: each costs only the months past the paid term, (h - m)+ x the monthly rent
(renewed at the offer's price), instead of the offer's full term. The model adds the
difference as a credit on rent, so the objective fills contracted racks first. Racks of
the contract left empty are sunk: they cost nothing more. The offer's availability counts
on top of the contract (the candidates stage adds it), and the set-up fee is not charged
again at a site already contracted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.builder import Expr, Var, wsum
from gpusolve.optimize.ir import Instance, Stock


@dataclass
class InventoryVars:
    """The inventory's handles in the model."""

    bought: dict[tuple[str, str], Var]  # servers bought per (sku, site): what capex counts
    resale: Expr  # owned servers sold, credited apart from the TCO
    rent_credit: Expr  # rent the contracted racks save (<= 0 added to rent)
    full: dict[tuple[str, str], Var] = field(default_factory=dict)  # every owned one in service
    covered: dict[str, Var] = field(default_factory=dict)  # racks from the contract, by site
    moved: dict[tuple[str, str, str], Var] = field(default_factory=dict)  # (sku, from, to)
    moves: Expr | int = 0  # what the moves cost (on rent)

    def variables(self) -> list[Var]:
        """Every variable of the family, for complete hints."""
        buys = [v for key, v in self.bought.items() if key in self.full]
        held = list(self.full.values()) + list(self.covered.values())
        return buys + held + list(self.moved.values())

    def site_variables(self) -> dict[str, list[Var]]:
        """The family's variables by the site they belong to."""
        out: dict[str, list[Var]] = defaultdict(list)
        for key, var in self.full.items():
            out[key[1]] += [self.bought[key], var]
        for site, var in self.covered.items():
            out[site].append(var)
        for (_, _, to), var in self.moved.items():
            out[to].append(var)
        return out


def stock_by_key(instance: Instance) -> dict[tuple[str, str], Stock]:
    """The owned servers per (sku, site)."""
    return {(s.sku, s.site): s for s in instance.stock}


def add_inventory(
    model: cp_model.CpModel,
    instance: Instance,
    servers: Mapping[tuple[str, str], Var],
    servers_ub: Mapping[tuple[str, str], int],
    racks_at: Mapping[str, Expr],
    racks_ub: Mapping[str, int],
) -> InventoryVars:
    """Purchases, moves, resale and the contracted racks' rent credit (see the module
    notes)."""
    stock = stock_by_key(instance)
    moved = _moves(model, instance, servers)
    out_of: dict[tuple[str, str], list[Var]] = defaultdict(list)  # (sku, from) -> moved out
    into: dict[tuple[str, str], list[Var]] = defaultdict(list)  # (sku, to) -> moved in
    for (k, src, dst), var in moved.items():
        out_of[k, src].append(var)
        into[k, dst].append(var)
    used: dict[tuple[str, str], Expr] = {}  # owned servers in service at their own site
    bought: dict[tuple[str, str], Var] = {}
    full: dict[tuple[str, str], Var] = {}
    for key in sorted(servers):
        n = servers[key]
        sku = instance.skus.get(key[0])
        buyable = sku is None or sku.buyable
        held = stock.get(key)
        if held is None and not into[key]:
            if not buyable:
                model.add(n == 0)  # nothing owned here and none may be bought
            bought[key] = n
            continue
        ub = servers_ub[key]
        buy = model.new_int_var(0, ub if buyable else 0, f"buy[{key[0]}@{key[1]}]")
        all_in = model.new_bool_var(f"full[{key[0]}@{key[1]}]")
        owned_here = n - buy - sum(into[key])  # the site's own owned servers in service
        model.add(owned_here >= 0)
        if held is None:
            model.add(owned_here == 0)
        else:
            used[key] = owned_here
        model.add(buy <= ub * all_in)
        bought[key] = buy
        full[key] = all_in
    # Owned first: every owned server of the model that could serve at a site is in service
    # (at home or moved) before one is bought there.
    for key, all_in in full.items():
        for line in _could_serve(instance, key, moved):
            home = used.get((line.sku, line.site))
            taken = (home if home is not None else 0) + sum(out_of[line.sku, line.site])
            model.add(taken >= line.count * all_in)
    resale: Expr = cp_model.LinearExpr.constant(0)
    for (k, site), held in stock.items():
        home = used.get((k, site))
        taken = (home if home is not None else 0) + sum(out_of[k, site])
        if home is not None or out_of[k, site]:
            model.add(taken <= held.count)
        # Sold: count - (in service at home + moved away).
        resale = resale + held.resale * (held.count - taken)
    credit, covered = _contract_credit(model, instance, racks_at, racks_ub)
    cost = wsum([(stock[(k, src)].move_cost or 0, v) for (k, src, _), v in moved.items()])
    return InventoryVars(bought, resale, credit, full, covered, moved, cost)


def _moves(
    model: cp_model.CpModel, instance: Instance, servers: Mapping[tuple[str, str], Var]
) -> dict[tuple[str, str, str], Var]:
    """moved[k,s->t]: owned servers of a movable line to every other site that hosts SKU k."""
    moved: dict[tuple[str, str, str], Var] = {}
    for line in instance.stock:
        if line.move_cost is None:
            continue
        for k, dst in sorted(servers):
            if k == line.sku and dst != line.site:
                name = f"moved[{k}:{line.site}->{dst}]"
                moved[k, line.site, dst] = model.new_int_var(0, line.count, name)
    return moved


def _could_serve(
    instance: Instance, key: tuple[str, str], moved: Mapping[tuple[str, str, str], Var]
) -> list[Stock]:
    """The owned lines of the model that could serve at `key`'s site: its own, and every
    line that may move there."""
    k, site = key
    return [
        line
        for line in instance.stock
        if line.sku == k and (line.site == site or (k, line.site, site) in moved)
    ]


def contract_saving(instance: Instance, site_id: str) -> int:
    """What one contracted rack saves over renting it: the offer's full term less the
    months past the paid term (renewed at the monthly price)."""
    site = instance.sites[site_id]
    contract = instance.contracts[site_id]
    h = instance.horizon_months
    full_term = finance.rent_months(h, site.rent_months)
    renewal = max(0, h - contract.months_paid)
    return (full_term - renewal) * site.rack_rent_month


def _contract_credit(
    model: cp_model.CpModel,
    instance: Instance,
    racks_at: Mapping[str, Expr],
    racks_ub: Mapping[str, int],
) -> tuple[Expr, dict[str, Var]]:
    """covered[s] <= min(racks at s, contracted racks), and the rent it saves (negative)."""
    terms: list[tuple[int, Var]] = []
    covered: dict[str, Var] = {}
    for site_id in sorted(instance.contracts):
        if site_id not in racks_at:
            continue  # no server can go there: the contract is sunk
        contract = instance.contracts[site_id]
        top = min(contract.racks, racks_ub.get(site_id, contract.racks))
        var = model.new_int_var(0, top, f"covered[{site_id}]")
        model.add(var <= racks_at[site_id])
        covered[site_id] = var
        terms.append((-contract_saving(instance, site_id), var))
    return wsum(terms), covered


def purchases(
    instance: Instance,
    servers: Mapping[tuple[str, str], int],
    bought: Mapping[tuple[str, str], int],
) -> dict[tuple[str, str], int]:
    """Servers bought per (sku, site): `bought` when the instance holds stock, else every
    server in service (a solution read without an inventory need not list them)."""
    if not instance.stock:
        return dict(servers)
    return {k: v for k, v in bought.items() if v > 0}


def inventory_problems(
    instance: Instance,
    servers: Mapping[tuple[str, str], int],
    bought: Mapping[tuple[str, str], int],
    moved: Mapping[tuple[str, str, str], int] | None = None,
) -> list[str]:
    """What a solution's counts break of the inventory's rules (the model's, restated)."""
    problems: list[str] = []
    moved = moved or {}
    stock = stock_by_key(instance)
    into = _moved_into(moved)
    taken = kept_counts(instance, servers, bought, moved)
    for key, n in purchases(instance, servers, bought).items():
        home = servers.get(key, 0) - n - into.get(key, 0)
        if n < 0 or home < 0:
            problems.append(f"{key}: {n} bought of {servers.get(key, 0)} in service")
        if n > 0 and not instance.skus[key[0]].buyable:
            problems.append(f"{key}: {n} bought although the market forbids it")
        left = [
            line
            for line in stock.values()
            if line.sku == key[0]
            and (line.site == key[1] or line.move_cost is not None)
            and taken[(line.sku, line.site)] != line.count
        ]
        if n > 0 and left:
            problems.append(
                f"{key}: {n} bought while owned {left[0].sku} at {left[0].site} stay out"
            )
    for (k, src, dst), count in moved.items():
        line = stock.get((k, src))
        if line is None or line.move_cost is None:
            problems.append(f"{k}: {count} moved from {src}, where none may move")
        if count and servers.get((k, dst), 0) < count:
            problems.append(f"{k}: {count} moved to {dst}, fewer in service there")
    for key, held in stock.items():
        if taken[key] > held.count:
            problems.append(f"{key}: more owned servers in service than the {held.count} held")
    return problems


def _moved_into(moved: Mapping[tuple[str, str, str], int]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = defaultdict(int)
    for (k, _src, dst), count in moved.items():
        out[k, dst] += count
    return out


def move_cost(instance: Instance, moved: Mapping[tuple[str, str, str], int]) -> int:
    """What the solution's moves cost."""
    stock = stock_by_key(instance)
    return sum((stock[(k, src)].move_cost or 0) * n for (k, src, _), n in moved.items())


def rent_credit(
    instance: Instance, racks: Mapping[tuple[str, tuple[tuple[str, int], ...]], int]
) -> int:
    """The rent the contracted racks save in a plan with these racks (<= 0)."""
    return -sum(
        contract_saving(instance, site) * covered
        for site, covered in covered_racks(instance, racks).items()
    )


def kept_counts(
    instance: Instance,
    servers: Mapping[tuple[str, str], int],
    bought: Mapping[tuple[str, str], int],
    moved: Mapping[tuple[str, str, str], int] | None = None,
) -> dict[tuple[str, str], int]:
    """Owned servers kept per owned line (sku, site), from a solution's counts: in service
    at their site, or moved to serve at another."""
    moved = moved or {}
    into = _moved_into(moved)
    out: dict[tuple[str, str], int] = defaultdict(int)
    for key in stock_by_key(instance):
        out[key] = servers.get(key, 0) - bought.get(key, 0) - into.get(key, 0)
    for (k, src, _dst), count in moved.items():
        out[k, src] += count
    return dict(out)


def resale_value(
    instance: Instance,
    servers: Mapping[tuple[str, str], int],
    bought: Mapping[tuple[str, str], int],
    moved: Mapping[tuple[str, str, str], int] | None = None,
) -> int:
    """The credit for owned servers sold: resale x (owned - in service)."""
    kept = kept_counts(instance, servers, bought, moved)
    return sum(s.resale * (s.count - kept[(s.sku, s.site)]) for s in instance.stock)


def covered_racks(
    instance: Instance, racks: Mapping[tuple[str, tuple[tuple[str, int], ...]], int]
) -> dict[str, int]:
    """Racks of each site that the contract covers: as many racks holding servers as the
    plan uses there, up to the contract (`Solution.racks`: (site, fill) -> racks; racks
    holding switches alone are rented as the fabric sizes them)."""
    holding: dict[str, int] = defaultdict(int)
    for (site, fill), count in racks.items():
        if fill:
            holding[site] += count
    return {
        site: min(c.racks, holding[site])
        for site, c in instance.contracts.items()
        if site in instance.sites
    }
