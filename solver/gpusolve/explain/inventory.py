"""The inventory's lines: what the plan does with each owned server model and contracted
rack (`optimize/inventory.py`), with the sunk price shown apart and the resale credit."""

from __future__ import annotations

from gpusolve.models.inventory import OwnedServers
from gpusolve.models.inventory_report import ContractedRacksLine, Inventory, OwnedServersLine
from gpusolve.models.plan import Plan
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.optimize.inventory import contract_saving, covered_racks, kept_counts


def inventory(solution: ir.Solution, instance: ir.Instance, reqs: Requirements) -> Inventory | None:
    """The owned servers and contracted racks of `reqs` as this plan uses them; None
    without an inventory."""
    owned = reqs.owned
    if not owned.servers and not owned.racks:
        return None
    kept = kept_counts(instance, solution.servers, solution.bought, solution.moved)
    lines = [
        _server_line(held, kept.get((held.server, held.site), 0), instance, solution.moved)
        for held in owned.servers
    ]
    covered = covered_racks(instance, solution.racks)
    h = instance.horizon_months
    racks = []
    for contract in owned.racks:
        paid = min(contract.term_months, h)
        used = covered.get(contract.site, 0)
        saved = contract_saving(instance, contract.site) * used if used else 0
        racks.append(
            ContractedRacksLine(
                site=contract.site,
                racks=contract.racks,
                months_paid=paid,
                used=used,
                renewed_months=h - paid if used else 0,
                saved=float(saved),
            )
        )
    return Inventory(
        servers=lines,
        racks=racks,
        sunk=float(sum(line.sunk or 0.0 for line in lines)),
        resale=float(sum(line.resale for line in lines)),
    )


def _server_line(
    held: OwnedServers,
    in_service: int,
    instance: ir.Instance,
    moved: dict[tuple[str, str, str], int],
) -> OwnedServersLine:
    stock = next(s for s in instance.stock if (s.sku, s.site) == (held.server, held.site))
    away = {dst: n for (k, src, dst), n in moved.items() if (k, src) == (stock.sku, stock.site)}
    out = held.count - in_service
    sold = out if held.resale is not None else 0
    sku = instance.skus.get(held.server)
    note = None
    if sku is not None and not sku.buyable:
        note = (
            "the market forbids buying more; the owned ones may be used (export rules "
            "restrict sales, not stock already held)"
        )
    return OwnedServersLine(
        server=held.server,
        site=held.site,
        owned=held.count,
        in_service=in_service,
        moved=away,
        move_cost=float((stock.move_cost or 0) * sum(away.values())),
        move_downtime_days=stock.move_downtime_days if away else 0.0,
        sold=sold,
        idle=out - sold,
        bought=held.bought,
        price_paid=held.price_paid,
        sunk=held.price_paid * held.count if held.price_paid is not None else None,
        resale_each=float(stock.resale) if held.resale is not None else None,
        resale=float(stock.resale * sold),
        export_note=note,
        unusable=_unusable(held, instance),
    )


def _unusable(held: OwnedServers, instance: ir.Instance) -> str | None:
    """Why the owned servers cannot work where they are: no workload has a layout on this
    model that may run at this site (its racks, the rules, the regions)."""
    for option in instance.owned:
        if option.sku == held.server and any(p.site == held.site for p in option.placements):
            return None
    return (
        f"no workload can run on {held.server} at {held.site} (its racks' power or cooling, "
        "the rules or the allowed regions rule it out)"
    )


def in_service(plan: Plan) -> frozenset[str]:
    """Server models the plan runs from the owned stock (for the compliance lines)."""
    if plan.inventory is None:
        return frozenset()
    return frozenset(line.server for line in plan.inventory.servers if line.in_service)
