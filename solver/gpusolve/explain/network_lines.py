"""The network's cost lines: what the optimiser bought for the cluster network, as
purchase-order lines (quantity, unit, unit price, source, illustrative) whose amounts add
up to the model's own network figure (`optimize/fabric.py`). Unit prices are the
instance's, VAT included when the requirements add it (`goods`: 1 + the rate on goods)."""

from __future__ import annotations

from collections import defaultdict

from gpusolve.candidates.network import PDU_FEEDS, RackSwitch, nic_for, rack_network
from gpusolve.models.catalog import Catalog, NetworkLink, NetworkNic, NetworkSwitch, RackPdu
from gpusolve.models.common import PriceNote
from gpusolve.models.money import vat_note
from gpusolve.models.plan import CostItem
from gpusolve.optimize import ir
from gpusolve.optimize.fabric import small_switch


def _line(
    site: str,
    subject: str,
    detail: str,
    quantity: int,
    unit: str,
    unit_price: int,
    item: NetworkSwitch | NetworkLink | NetworkNic | RackPdu | None,
) -> CostItem:
    return CostItem(
        kind="network",
        subject=subject,
        detail=detail,
        amount=quantity * unit_price,
        quantity=quantity,
        unit=unit,
        unit_price=unit_price,
        source=_source(item.pricing if item is not None else None),
        illustrative=item.pricing.illustrative if item is not None else True,
        site=site,
    )


def _source(note: PriceNote | None) -> str:
    """As every cost line states it (`itemise.price_source`): the source and its date."""
    if note is None:
        return "not in the catalogue"
    return f"{note.source} (as of {note.as_of})"


def topology(count: ir.FabricCount, fabric: ir.FabricClass) -> str:
    """In words: 'one 64-port switch' / '4 leaves (32 down, 32 up) + 2 spines'."""
    small = small_switch(fabric, count)
    if small is not None:
        return f"one {small.radix}-port switch, the smallest that holds {count.ports} ports"
    if count.direct_links and not count.switches:
        return "two servers cabled back-to-back, no switch"
    if count.single:
        return f"one {fabric.radix}-port switch"
    return (
        f"two-tier fat tree: {count.leaves} leaves ({fabric.down_ports} ports down, "
        f"{fabric.up_ports} up) + {count.spines} spines"
    )


def network_items(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog, goods: float
) -> list[CostItem]:
    """Per site: fabric switches and links, fabric NICs, and each rack's own switches (ToR,
    management) with their uplinks and its PDUs where bought."""
    vat = vat_note(goods)
    out: list[CostItem] = []
    for (site, cls), count in sorted(solution.fabric.items()):
        fabric = instance.fabrics[cls]
        switch = catalog.switches.get(fabric.switch)
        link = catalog.links.get(fabric.link)
        where = f"at {site}, {topology(count, fabric)}{vat}"
        small = small_switch(fabric, count)
        if small is not None:
            detail = f"1 x {small.id} {where}"
            item = catalog.switches.get(small.id)
            out.append(_line(site, small.id, detail, 1, "switch", small.price, item))
        if count.direct_links and fabric.direct_link is not None:
            cable = catalog.links.get(fabric.direct_link)
            detail = (
                f"{count.direct_links} NIC-to-NIC links at {site}: two servers cabled "
                f"back-to-back, NIC i to NIC i, no switch{vat}"
            )
            price = fabric.direct_link_price
            out.append(
                _line(site, fabric.direct_link, detail, count.direct_links, "link", price, cable)
            )
        if count.single or count.leaves or count.spines:
            own = count.single + count.leaves + count.spines
            detail = f"{own} x {fabric.switch} {where}"
            out.append(
                _line(
                    site,
                    fabric.switch,
                    detail,
                    own,
                    "switch",
                    fabric.switch_price,
                    switch,
                )
            )
        up = fabric.up_ports * count.leaves
        links = count.ports + up
        if links and count.leaves:
            detail = f"{count.ports} server-to-switch + {up} leaf-to-spine links at {site}{vat}"
            out.append(_line(site, fabric.link, detail, links, "link", fabric.link_price, link))
        elif links:
            detail = f"{count.ports} server-to-switch links at {site}{vat}"
            out.append(_line(site, fabric.link, detail, links, "link", fabric.link_price, link))
    out += _nics(solution, instance, catalog, vat)
    out += _rack_parts(solution, instance, catalog, goods)
    return out


def _nics(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog, vat: str
) -> list[CostItem]:
    """Fabric NICs of the servers on a fabric: bought apart, or inside the server price."""
    on_fabric = {(site, cls) for site, cls in solution.fabric}
    out: list[CostItem] = []
    for (sku_id, site), n in sorted(solution.servers.items()):
        sku = instance.skus[sku_id]
        if sku.fabric is None or (site, sku.fabric) not in on_fabric or sku.nics == 0:
            continue
        quantity = n * sku.nics
        server = catalog.servers.get(sku_id)
        if sku.nic_capex:
            nic = nic_for(catalog, server) if server is not None else None
            unit_price = sku.nic_capex // sku.nics
            detail = f"{n} x {sku_id} x {sku.nics} NICs at {site}, bought apart{vat}"
            out.append(
                _line(site, nic.id if nic else "nic", detail, quantity, "NIC", unit_price, nic)
            )
        else:
            detail = f"{n} x {sku_id} x {sku.nics} NICs at {site}, included in the server price"
            item = CostItem(
                kind="network",
                subject=f"{sku_id} fabric NIC",
                detail=detail,
                amount=0,
                quantity=quantity,
                unit="NIC",
                unit_price=0,
                source=_source(server.pricing if server is not None else None),
                illustrative=server.pricing.illustrative if server is not None else True,
                site=site,
            )
            out.append(item)
    return out


_RACK_SWITCH_WORDS = {"tor": "top-of-rack", "management": "management (BMC)"}


def _rack_parts(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog, goods: float
) -> list[CostItem]:
    """Per site, what each rack of servers buys for itself (`network.RackNetwork`): its ToR
    and management switch with their uplinks, and its PDUs where the rent lacks them."""
    racks: dict[str, int] = defaultdict(int)
    for (site, fill), count in solution.racks.items():
        if fill:  # racks of switches alone have no servers to connect
            racks[site] += count
    vat = vat_note(goods)
    out: list[CostItem] = []
    for site, count in sorted(racks.items()):
        here = instance.sites[site]
        if not count or not here.rack_network_capex:
            continue
        own = rack_network(catalog, goods, here.rack_servers, here.pdu_feed_w)
        for part in own.switches():
            what = _RACK_SWITCH_WORDS[part.switch.role]
            out += _switch_lines(site, what, part, count, here.rack_servers, vat)
        if own.pdus is not None:
            per = own.pdus.count
            detail = (
                f"{per} PDUs per rack ({per // PDU_FEEDS} per feed, A and B, each carrying "
                f"{here.pdu_feed_w / 1000:g} kW alone; the rent does not include them) x "
                f"{count} rack(s) at {site}{vat}"
            )
            price = own.pdus.unit_price
            out.append(
                _line(site, own.pdus.pdu.id, detail, per * count, "PDU", price, own.pdus.pdu)
            )
    return out


def _switch_lines(
    site: str, what: str, part: RackSwitch, racks: int, fits: int, vat: str
) -> list[CostItem]:
    """One rack switch (ToR or management) per rack, and its uplinks."""
    detail = (
        f"one {what} switch per rack ({part.switch.ports} ports; a rack there holds up to "
        f"{fits} servers): {racks} rack(s) at {site}{vat}"
    )
    out = [_line(site, part.switch.id, detail, racks, "switch", part.switch_price, part.switch)]
    if part.uplink is not None and part.switch.uplinks:
        per = part.switch.uplinks
        detail = f"{per} uplinks per {what} switch x {racks} rack(s) at {site}{vat}"
        price = part.uplink_price
        out.append(_line(site, part.uplink.id, detail, per * racks, "link", price, part.uplink))
    return out


def storage_items(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog, goods: float
) -> list[CostItem]:
    """Per site: the shared-storage nodes holding checkpoints and datasets (H16)."""
    need: dict[str, int] = defaultdict(int)
    owned = {o.key: o for o in instance.owned}
    for choice in solution.choices:
        option = owned.get(choice.option)
        if option is not None and choice.site is not None:
            need[choice.site] += option.storage_gb
    out: list[CostItem] = []
    for (site_id, kind_id), nodes in sorted(solution.storage.items()):
        kind = next((k for k in instance.sites[site_id].storage if k.id == kind_id), None)
        if kind is None or nodes == 0:
            continue
        node = catalog.storage.get(kind.id)
        detail = (
            f"{nodes} x {kind.id} ({kind.capacity_gb:,} GB usable each) at {site_id} for "
            f"{need[site_id]:,} GB: checkpoints, datasets and weights kept, within the fill "
            f"limit (rule parameter storage_fill_fraction){vat_note(goods)}"
        )
        note = node.pricing if node is not None else None
        out.append(
            CostItem(
                kind="storage",
                subject=kind.id,
                detail=detail,
                amount=nodes * kind.price,
                quantity=nodes,
                unit="storage node",
                unit_price=kind.price,
                source=_source(note),
                illustrative=note.illustrative if note is not None else True,
                site=site_id,
            )
        )
    return out
