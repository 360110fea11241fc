"""The bill of materials: what a purchase order (and a rental contract) holds, read from
the plan's itemised cost.

Per colo site, card -> server -> rack -> site: the cards come inside their servers (a
line each, unpriced, "inside <server>"), then the servers bought, the rack-months rented,
and the site's running costs (energy, bandwidth). Then network, storage and spares, then
cloud rentals. Every priced line is one cost line of the plan, so the BOM's amounts add up
to the TCO the cost section prints (capex + opex over the horizon); a cost line without a
unit price (a mixed-SKU energy bill, a kind added later without one) is one lot.
"""

from __future__ import annotations

from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import BomLine, BomSection, CostItem, Plan, SourceRef

# Cost-line kinds -> BOM section. Kinds other modules add (network, storage, spares,
# finance) are matched by their leading word; anything else is a running cost of a site.
SECTION_OF_KIND: dict[str, BomSection] = {
    "servers_capex": "server",
    "financing": "server",  # what financing adds to the servers' price: beside them
    "rack_rent": "rack",
    "energy": "site",
    "bandwidth": "site",
    "cloud_rental": "cloud",
}
SECTION_OF_PREFIX: tuple[tuple[str, BomSection], ...] = (
    ("network", "network"),
    ("fabric", "network"),
    ("switch", "network"),
    ("nic", "network"),
    ("optic", "network"),
    ("cable", "network"),
    ("transceiver", "network"),
    ("link", "network"),
    ("leaf", "network"),
    ("spine", "network"),
    ("tor", "network"),
    ("storage", "storage"),
    ("spare", "spare"),
    ("cloud", "cloud"),
    ("rack", "rack"),
    ("server", "server"),
)
# Sections whose lines are catalogue items priced in their own entries (the rest are a
# colo offer's charges: rent, energy, bandwidth).
ITEM_SECTIONS: tuple[BomSection, ...] = ("server", "cloud", "network", "storage", "spare")
# Order of the per-site sections, then of the plan-wide ones.
SITE_SECTIONS: tuple[BomSection, ...] = ("card", "server", "rack", "site")
TAIL_SECTIONS: tuple[BomSection, ...] = ("network", "storage", "spare", "cloud")


def section_of(kind: str) -> BomSection:
    """The BOM section a cost line of `kind` belongs to (default: a site's running cost)."""
    if kind in SECTION_OF_KIND:
        return SECTION_OF_KIND[kind]
    for prefix, section in SECTION_OF_PREFIX:
        if kind.startswith(prefix):
            return section
    return "site"


def bom_line(item: CostItem) -> BomLine:
    """One cost line as a BOM line; without a unit price, one lot at its amount."""
    label = item.kind.replace("_", " ")
    note = f"{label}: {item.detail}" if item.detail else label
    section = section_of(item.kind)
    # A site's running cost (energy, bandwidth) is named by what it buys; the site is
    # its own column.
    name = label if section == "site" and item.subject == item.site else item.subject
    if item.quantity is None or item.unit_price is None:
        return BomLine(
            section=section,
            item=name,
            site=item.site,
            quantity=1,
            unit="lot",
            unit_price=item.amount,
            amount=item.amount,
            source=item.source,
            illustrative=item.illustrative,
            note=note,
        )
    return BomLine(
        section=section,
        item=name,
        site=item.site,
        quantity=item.quantity,
        unit=item.unit or "unit",
        unit_price=item.unit_price,
        amount=item.amount,
        source=item.source,
        illustrative=item.illustrative,
        note=note,
    )


def card_lines(server_line: BomLine, catalog: Catalog) -> list[BomLine]:
    """The cards inside the servers of one server line: counted, priced with the server."""
    server = catalog.servers.get(server_line.item)
    if server is None:
        return []
    return [
        BomLine(
            section="card",
            item=server.card,
            site=server_line.site,
            quantity=server_line.quantity * server.gpus,
            unit="card",
            unit_price=None,
            amount=0,
            source="",
            illustrative=False,  # no price of its own: the server line carries it
            note=f"inside {server.id}",
        )
    ]


def bill_of_materials(plan: Plan, catalog: Catalog) -> list[BomLine]:
    """The plan's bill of materials (empty when the plan has no cost)."""
    if plan.cost is None:
        return []
    return bom_of_items(plan.cost.breakdown.items, [s.offer for s in plan.sites], catalog)


def bom_of_items(items: list[CostItem], site_order: list[str], catalog: Catalog) -> list[BomLine]:
    """Cost lines as a bill of materials: per site (in `site_order`, then the others by
    name) the cards inside the servers bought, the servers, racks and running costs; then
    the plan-wide lines, network, storage, spares and rentals. Zero lines are left out."""
    items = [i for i in items if i.amount]
    lines = [bom_line(i) for i in items]
    bought = [ln for i, ln in zip(items, lines, strict=True) if i.kind == "servers_capex"]
    order = list(site_order)
    order += sorted({ln.site for ln in lines if ln.site is not None} - set(order))
    out: list[BomLine] = []
    for site in order:
        here = [ln for ln in lines if ln.site == site and ln.section in SITE_SECTIONS]
        for ln in bought:
            if ln.site == site:
                out += card_lines(ln, catalog)
        for section in SITE_SECTIONS:
            out += [ln for ln in here if ln.section == section]
    # Site-less lines of a per-site section (a plan-wide charge) come before the tail.
    out += [ln for ln in lines if ln.site is None and ln.section in SITE_SECTIONS]
    for section in TAIL_SECTIONS:
        out += [ln for ln in lines if ln.section == section]
    return out


def _price_field(name: str) -> bool:
    return "price" in name or name in ("pricing", "pue", "power_included", "bandwidth_mbps")


def price_location(ref: SourceRef) -> str:
    """file:line where the item's price was last set: the latest patch that changed a
    price field (a quote in the user's catalogue), else the item's definition."""
    for patch in reversed(ref.patched_at):
        if any(_price_field(f) for f in patch.fields):
            return patch.at
    return ref.defined_at


def locate(lines: list[BomLine], sources: list[SourceRef]) -> list[BomLine]:
    """The BOM with each priced line's catalogue file:line after its source string (the
    item itself for servers, network, storage and rentals; the colo offer for a site's
    rent, energy and bandwidth)."""
    where = {ref.id: price_location(ref) for ref in sources}
    out: list[BomLine] = []
    for ln in lines:
        key = ln.item if ln.section in ITEM_SECTIONS else ln.site
        at = where.get(key or "") if ln.unit_price is not None else None
        if at is None or at in ln.source:
            out.append(ln)
            continue
        source = f"{ln.source}; {at}" if ln.source else at
        out.append(ln.model_copy(update={"source": source}))
    return out
