"""The bill of materials of each period of a purchase schedule (`plan --bom` with `periods:`).

Each period's lines are its cost lines read the way the single plan's are (`explain/bom.py`):
the servers bought in it at the period's price, the network and storage it adds (the
period's fabric, rack switches and storage nodes as a single plan itemises them, less what
earlier periods bought), the racks contracted in it (over their whole term, as the
schedule charges them), each site's energy and fees over the period, and the rentals of
the period. A period's lines add up to its spend: capex + rack rent + site fees + energy +
rentals; the residual value is a credit at the horizon, not a line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpusolve.explain.bom import bom_of_items, locate
from gpusolve.explain.lines import colo_pricing, power_pricing, price_source, priced
from gpusolve.explain.network_lines import network_items, storage_items
from gpusolve.models.catalog import Catalog
from gpusolve.models.common import PriceNote
from gpusolve.models.plan import BomLine, CostItem, CostKind, SourceRef
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import PeriodPlan, PhasedInstance, PhasedSolution
from gpusolve.optimize.phased.switching import moves


def _sites(pi: PhasedInstance) -> dict[str, ir.Site]:
    return {k: v for inst in reversed(pi.instances) for k, v in inst.sites.items()}


def _floors(pi: PhasedInstance, sites: dict[str, ir.Site]) -> dict[str, int]:
    """Racks contracted before month 0 (paid apart, never a line here)."""
    contracts = pi.instances[0].contracts if pi.instances else {}
    return {s: min(c.racks, sites[s].racks_available) for s, c in contracts.items() if s in sites}


def sku_price(pi: PhasedInstance, sku: str) -> int:
    """The SKU's price today (the catalogue's, VAT as the run states it)."""
    return next(i.skus[sku].capex for i in pi.instances if sku in i.skus)


def _capex(pi: PhasedInstance, pp: PeriodPlan, catalog: Catalog) -> list[CostItem]:
    out = []
    q, month = pp.period.index, pp.period.start_month
    for (sku, site), n in sorted(pp.bought.items()):
        price = pi.price[sku][q]
        assert price is not None  # bought, so buyable in this period
        server = catalog.servers.get(sku)
        trend = ", by its price trend" if server is not None and price != sku_price(pi, sku) else ""
        detail = f"{n} at {site} x {price:,} (the price at month {month}{trend})"
        line = CostItem(kind="servers_capex", subject=sku, detail=detail, amount=n * price)
        note = server.pricing if server is not None else None
        out.append(priced(line, n, "server", price, note, site=site))
    return out


@dataclass(frozen=True)
class _Sites:
    """What a period's site lines read besides the period: the racks held before it (by
    site), the sites, the catalogue."""

    before: dict[str, int]
    sites: dict[str, ir.Site]
    catalog: Catalog


def _racks(pi: PhasedInstance, pp: PeriodPlan, at: _Sites) -> list[CostItem]:
    before, sites, catalog = at.before, at.sites, at.catalog
    out = []
    start = pp.period.start_month
    for site, n in sorted(pp.racks.items()):
        new = n - before.get(site, 0)
        if new <= 0:
            continue
        rent = sites[site].rack_rent_month
        months = max(pi.horizon_months - start, pi.min_term_months.get(site, 0))
        detail = f"{new} rack(s) contracted from month {start} x {rent:,}/month x {months} months"
        line = CostItem(kind="rack_rent", subject=site, detail=detail, amount=new * rent * months)
        note = colo_pricing(catalog, site)
        out.append(priced(line, new * months, "rack-month", rent, note, site=site))
    return out


def _site_costs(pp: PeriodPlan, at: _Sites) -> list[CostItem]:
    """Per site: energy (the servers in service idle, and the workloads' busy energy) and
    fees (included bandwidth for the period; the setup fee in the first period it is
    held)."""
    before, sites, catalog = at.before, at.sites, at.catalog
    months = pp.period.months
    energy: dict[str, int] = defaultdict(int)
    for (sku, site), n in pp.working.items():
        energy[site] += sites[site].energy_month.get(sku, 0) * months * n
    for c in pp.choices:
        if c.site is not None:
            energy[c.site] += c.cost
    held = {s for s, n in pp.racks.items() if n > 0}
    out = []
    for site, amount in sorted(energy.items()):
        detail = f"months {pp.period.start_month}-{pp.period.end_month}, idle and busy"
        line = CostItem(kind="energy", subject=site, detail=detail, amount=amount, site=site)
        out.append(_sourced(line, power_pricing(catalog, site)))
    for site in sorted(held):
        fee = sites[site].bandwidth_month * months
        first = not before.get(site)
        if first:
            fee += sites[site].setup_fee
        detail = f"included bandwidth x {months} months" + (
            ", setup fee" if first and sites[site].setup_fee else ""
        )
        line = CostItem(kind="bandwidth", subject=site, detail=detail, amount=fee, site=site)
        out.append(_sourced(line, colo_pricing(catalog, site)))
    return out


def _sourced(line: CostItem, note: PriceNote | None) -> CostItem:
    """A lot (no unit price of its own) with its price's source and label."""
    source, illustrative = price_source(note)
    return line.model_copy(update={"source": source, "illustrative": illustrative})


def _rentals(pp: PeriodPlan, catalog: Catalog) -> list[CostItem]:
    out = []
    for c in (*pp.choices, *pp.bursts):
        if c.site is not None or c.offer is None:
            continue
        unit_price = c.cost / c.servers if c.servers else c.cost
        detail = f"{c.servers} instance(s) for {c.workload} over {pp.period.months} months"
        line = CostItem(kind="cloud_rental", subject=c.offer, detail=detail, amount=c.cost)
        offer = catalog.cloud_offers.get(c.offer)
        note = offer.pricing if offer is not None else None
        unit = f"instance x {pp.period.months} months"
        out.append(priced(line, c.servers, unit, unit_price, note))
    return out


def _reconcile(items: list[CostItem], total: int, kind: CostKind, what: str) -> list[CostItem]:
    """A remainder line where the per-site reading misses part of the period's total (a
    site held without racks), so that the lines always add up to the schedule's figure."""
    missing = total - sum(int(i.amount) for i in items if i.kind == kind)
    if not missing:
        return []
    detail = f"{what} not split by site"
    return [CostItem(kind=kind, subject=what, detail=detail, amount=missing)]


NetKey = tuple[str, str, str | None]  # (kind, subject, site)


def _network(
    pi: PhasedInstance,
    pp: PeriodPlan,
    held: dict[NetKey, CostItem],
    catalog: Catalog,
    goods: float,
) -> tuple[list[CostItem], dict[NetKey, CostItem]]:
    """The network and storage the period adds: its whole fabric, rack parts and storage
    nodes itemised as a single plan's, less the quantities earlier periods hold; and what
    is held from then on."""
    inst = pi.instances[pp.period.index]
    choices = tuple(ir.Choice(c.workload, c.option, c.site) for c in pp.choices)
    solution = ir.Solution(
        "optimal",
        choices=choices,
        servers=dict(pp.working),
        racks={(site, (("servers", n),)): n for site, n in pp.server_racks.items()},
        fabric=dict(pp.fabric),
        storage=dict(pp.storage),
    )
    now = network_items(solution, inst, catalog, goods) + storage_items(
        solution, inst, catalog, goods
    )
    added: list[CostItem] = []
    kept = dict(held)
    for item in now:
        key: NetKey = (item.kind, item.subject, item.site)
        before = held.get(key)
        more = (item.quantity or 0) - (before.quantity or 0 if before is not None else 0)
        if more > 0 and item.unit_price:
            amount = round(more * item.unit_price)
            detail = f"{more:g} more: {item.detail}" if before is not None else item.detail
            added.append(
                item.model_copy(update={"quantity": more, "amount": amount, "detail": detail})
            )
        if before is None or (item.quantity or 0) > (before.quantity or 0):
            kept[key] = item
    return added, kept


def _network_remainder(items: list[CostItem], total: int) -> list[CostItem]:
    """What the period's network spend differs from its itemised additions by: parts of an
    earlier fabric a larger one replaces (the schedule counts the spend to date)."""
    missing = total - sum(int(i.amount) for i in items if i.kind in ("network", "storage"))
    if not missing:
        return []
    detail = "network spend to date less the parts itemised (a smaller fabric replaced)"
    return [CostItem(kind="network", subject="network", detail=detail, amount=missing)]


def period_items(
    pi: PhasedInstance,
    pp: PeriodPlan,
    before: dict[str, int],
    catalog: Catalog,
    network: list[CostItem] = [],  # noqa: B006 (read, never changed)
    prev: PeriodPlan | None = None,
) -> list[CostItem]:
    """The cost lines of one period; they add up to the period's spend. `network`: the
    network and storage it adds (`_network`)."""
    at = _Sites(before, _sites(pi), catalog)
    items = _capex(pi, pp, catalog) + list(network) + _racks(pi, pp, at)
    items += _site_costs(pp, at) + _rentals(pp, catalog)
    c = pp.costs
    items += _network_remainder(items, c.network)
    items += _reconcile(items, c.energy, "energy", "energy")
    items += _reconcile(items, c.site_fixed, "bandwidth", "site fees")
    items += _reconcile(items, c.rack_rent, "rack_rent", "rack rent")
    return items + _until_delivery(items, c.cloud) + _moves(pi, prev, pp)


def _until_delivery(items: list[CostItem], cloud: int) -> list[CostItem]:
    """Rentals beyond the period's chosen ones: workloads on servers delivered within the
    period, or on owned servers moved at the schedule's start, rent their cheapest rental
    until then (`candidates/delivery.py`)."""
    missing = cloud - sum(int(i.amount) for i in items if i.kind == "cloud_rental")
    if not missing:
        return []
    detail = "workloads rent their cheapest rental until their servers are delivered or moved in"
    return [CostItem(kind="cloud_rental", subject="until delivery", detail=detail, amount=missing)]


def _moves(pi: PhasedInstance, prev: PeriodPlan | None, pp: PeriodPlan) -> list[CostItem]:
    """Workloads moved to another platform or site at the period's start, one line each
    (their switching cost; `optimize/phased/switching.py`)."""
    if not pp.costs.switching:
        return []
    return [
        CostItem(
            kind="workload_moves",
            subject="moves",
            detail="workloads moved to another platform or site: re-deployment, validation "
            f"and data transfer ({', '.join(f'{w} {c:,}' for w, c in moves(pi, prev, pp))})",
            amount=pp.costs.switching,
            illustrative=True,
        )
    ]


def period_boms(
    pi: PhasedInstance,
    best: PhasedSolution,
    catalog: Catalog,
    sources: list[SourceRef] | None = None,
    goods: float = 1.0,
) -> list[list[BomLine]]:
    """Each period's bill of materials, its prices located in the catalogue files; `goods`:
    the VAT factor the run prices goods at (as the single plan's lines say it)."""
    sites = _sites(pi)
    before = _floors(pi, sites)
    held: dict[NetKey, CostItem] = {}
    out = []
    prev: PeriodPlan | None = None
    for pp in best.periods:
        network, held = _network(pi, pp, held, catalog, goods)
        items = period_items(pi, pp, before, catalog, network, prev)
        prev = pp
        order = sorted({s for _k, s in pp.working} | set(pp.racks))
        lines = bom_of_items(items, order, catalog)
        out.append(locate(lines, sources) if sources else lines)
        before = {**before, **pp.racks}
    return out
