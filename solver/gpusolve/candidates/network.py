"""The network a plan buys, from the catalogue: which switch and link serve each server's
NICs, what one rack's top-of-rack switch costs, and which NICs a server lacks.

The optimiser sizes the fabric (`optimize/fabric.py`); this module only turns catalogue
items into the integer figures it needs. A server's NICs join a compute fabric of their
kind (InfiniBand on InfiniBand switches; RoCE and Ethernet on Ethernet switches) at their
rate; the switch a large fabric is built of is the catalogue's cheapest per port at that
rate, and every fewer-port, cheaper one may serve a small fabric alone. The link is the
cheapest optical or AOC link at least that fast (fabric links cross racks, beyond a DAC's
reach); two servers may instead be cabled NIC to NIC with the cheapest `nic_to_nic` link
at least that fast. A rack's top-of-rack switch, and its out-of-band management switch
(the servers' BMC ports), are each the cheapest of their role with a port for every server
the rack can hold; where the rent does not include PDUs, the rack buys one per power feed
(A and B), each able to carry the rack alone.
Every price is multiplied by `goods` (1 + VAT on goods, `generate.vat_factors`), as a
server's is: switches, links, NICs and storage nodes are bought goods like the servers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gpusolve.models.catalog import (
    Catalog,
    NetworkLink,
    NetworkNic,
    NetworkSwitch,
    RackPdu,
    Server,
)
from gpusolve.models.money import to_money
from gpusolve.optimize import ir

RDMA_SWITCH_FABRIC = {"infiniband": "infiniband", "roce": "ethernet"}
# A rack fed twice (A and B) keeps running when one feed fails: each feed's PDUs carry it all.
PDU_FEEDS = 2


@dataclass(frozen=True)
class RackSwitch:
    """One of a rack's own switches (its ToR or its management switch) and its uplinks."""

    switch: NetworkSwitch
    uplink: NetworkLink | None
    goods: float  # 1 + VAT on goods

    @property
    def switch_price(self) -> int:
        return to_money(self.switch.price * self.goods)

    @property
    def uplink_price(self) -> int:
        return to_money(self.uplink.price * self.goods) if self.uplink else 0

    @property
    def capex(self) -> int:
        return self.switch_price + self.uplink_price * self.switch.uplinks

    @property
    def power_w(self) -> int:
        link = self.uplink.power_w * self.switch.uplinks if self.uplink else 0.0
        return round(self.switch.power_w + link)


@dataclass(frozen=True)
class RackPdus:
    """The PDUs one rack buys: `count` of one model, split over its feeds."""

    pdu: RackPdu
    count: int
    goods: float  # 1 + VAT on goods

    @property
    def unit_price(self) -> int:
        return to_money(self.pdu.price * self.goods)

    @property
    def capex(self) -> int:
        return self.unit_price * self.count

    @property
    def power_w(self) -> int:
        return round(self.pdu.power_w * self.count)


@dataclass(frozen=True)
class RackNetwork:
    """What every rack of servers buys for itself: a front-end top-of-rack switch, an
    out-of-band management switch, each with its uplinks, and PDUs where the rent lacks
    them. A part the catalogue has none of is not bought (None)."""

    tor: RackSwitch | None = None
    management: RackSwitch | None = None
    pdus: RackPdus | None = None

    def switches(self) -> list[RackSwitch]:
        """The rack switches bought: its ToR, then its management switch."""
        return [s for s in (self.tor, self.management) if s is not None]

    @property
    def capex(self) -> int:
        pdus = self.pdus.capex if self.pdus else 0
        return sum(s.capex for s in self.switches()) + pdus

    @property
    def power_w(self) -> int:
        pdus = self.pdus.power_w if self.pdus else 0
        return sum(s.power_w for s in self.switches()) + pdus

    @property
    def rack_units(self) -> int:
        pdus = self.pdus.pdu.rack_units * self.pdus.count if self.pdus else 0
        return sum(s.switch.rack_units for s in self.switches()) + pdus


def down_ports(radix: int, oversubscription: float) -> int:
    """Leaf ports towards servers at an oversubscription (down / up <= ratio): half the
    radix when non-blocking. At least one port stays up so two tiers can connect."""
    down = math.floor(radix * oversubscription / (1 + oversubscription))
    return max(1, min(down, radix - 1))


def fabric_class_id(server: Server) -> str | None:
    """The fabric a server's NICs join across servers; None when it has no RDMA NICs."""
    fabric = server.fabric
    if fabric.kind not in RDMA_SWITCH_FABRIC or fabric.nics < 1 or fabric.nic_gbps <= 0:
        return None
    return f"{fabric.kind}-{fabric.nic_gbps:g}g"


def _switch_for(catalog: Catalog, fabric: str, gbps: float) -> NetworkSwitch | None:
    fits = [
        s
        for s in catalog.switches.values()
        if s.role == "fabric" and s.fabric == fabric and s.ports_at(gbps) > 0
    ]
    return min(fits, key=lambda s: (s.price / s.ports_at(gbps), s.id), default=None)


def _small_switches(
    catalog: Catalog, fabric: str, gbps: float, main: NetworkSwitch, goods: float
) -> tuple[ir.SwitchOption, ...]:
    """Switches with fewer ports than `main` at this rate and a lower price, fewest ports
    first; one that costs as much as another with more ports is left out."""
    fits = sorted(
        (
            s
            for s in catalog.switches.values()
            if s.role == "fabric"
            and s.fabric == fabric
            and 0 < s.ports_at(gbps) < main.ports_at(gbps)
            and s.price < main.price
        ),
        key=lambda s: (s.ports_at(gbps), s.price, s.id),
    )
    kept = [
        s
        for s in fits
        if not any(o.ports_at(gbps) > s.ports_at(gbps) and o.price <= s.price for o in fits)
    ]
    return tuple(
        ir.SwitchOption(
            id=s.id,
            radix=s.ports_at(gbps),
            price=to_money(s.price * goods),
            power_w=round(s.power_w),
            units=s.rack_units,
        )
        for s in kept
    )


def _link_for(
    catalog: Catalog, gbps: float, kinds: tuple[str, ...], nic_to_nic: bool = False
) -> NetworkLink | None:
    fits = [
        x
        for x in catalog.links.values()
        if x.gbps >= gbps and x.kind in kinds and x.nic_to_nic == nic_to_nic
    ]
    return min(fits, key=lambda x: (x.price, x.id), default=None)


def fabric_class(
    catalog: Catalog, server: Server, oversubscription: float, goods: float
) -> ir.FabricClass | None:
    """The switch and link for this server's fabric, or None when the catalogue has none
    (the fabric then costs nothing in the plan: say so rather than invent a price)."""
    class_id = fabric_class_id(server)
    if class_id is None:
        return None
    gbps = server.fabric.nic_gbps
    switch = _switch_for(catalog, RDMA_SWITCH_FABRIC[server.fabric.kind], gbps)
    link = _link_for(catalog, gbps, ("optical", "aoc"))
    if switch is None or link is None:
        return None
    radix = switch.ports_at(gbps)
    direct = _link_for(catalog, gbps, ("dac", "aoc", "optical"), nic_to_nic=True)
    return ir.FabricClass(
        id=class_id,
        switch=switch.id,
        link=link.id,
        radix=radix,
        down_ports=down_ports(radix, oversubscription),
        switch_price=to_money(switch.price * goods),
        switch_power_w=round(switch.power_w),
        switch_units=switch.rack_units,
        link_price=to_money(link.price * goods),
        small=_small_switches(catalog, RDMA_SWITCH_FABRIC[server.fabric.kind], gbps, switch, goods),
        direct_link=direct.id if direct is not None else None,
        direct_link_price=to_money(direct.price * goods) if direct is not None else 0,
    )


def rack_network(
    catalog: Catalog, goods: float, servers_per_rack: int = 0, pdu_feed_w: int = 0
) -> RackNetwork:
    """A rack's own parts: its ToR and management switch, each the cheapest of its role with
    a port for each of `servers_per_rack` servers (else the one with the most ports), with
    the link for its uplinks; and, where `pdu_feed_w` > 0 (the rent lacks PDUs), the PDUs
    each feed needs to carry that many W."""
    return RackNetwork(
        tor=_rack_switch(catalog, "tor", servers_per_rack, goods),
        management=_rack_switch(catalog, "management", servers_per_rack, goods),
        pdus=_rack_pdus(catalog, pdu_feed_w, goods),
    )


def _rack_switch(catalog: Catalog, role: str, servers: int, goods: float) -> RackSwitch | None:
    mine = [s for s in catalog.switches.values() if s.role == role]
    fits = [s for s in mine if s.ports >= servers]
    if fits:
        switch = min(fits, key=lambda s: (s.price, s.id))
    elif mine:
        switch = max(mine, key=lambda s: (s.ports, -s.price, s.id))
    else:
        return None
    kinds = ("dac", "aoc", "optical")
    uplink = _link_for(catalog, switch.uplink_gbps or 0.0, kinds) if switch.uplinks else None
    return RackSwitch(switch, uplink, goods)


def _rack_pdus(catalog: Catalog, feed_w: int, goods: float) -> RackPdus | None:
    """The cheapest way to give each feed `feed_w` W: as many of one PDU model as it takes
    (a 40 kW rack on 22 kW PDUs takes two per feed)."""
    if feed_w <= 0 or not catalog.pdus:
        return None

    def per_feed(pdu: RackPdu) -> int:
        return math.ceil(feed_w / (pdu.capacity_kw * 1000))

    pdu = min(catalog.pdus.values(), key=lambda p: (per_feed(p) * p.price, p.id))
    return RackPdus(pdu, PDU_FEEDS * per_feed(pdu), goods)


def servers_per_rack(rack_w: int, rack_units: int, cooling: str, servers: Iterable[Server]) -> int:
    """The most servers of any one of these models a rack holds (its usable W and U, and
    its cooling): what its top-of-rack and management switches need ports for."""
    most = 0
    for s in servers:
        if cooling in s.cooling:
            most = max(most, min(rack_units // s.rack_units, int(rack_w // (s.power_kw * 1000))))
    return most


def nic_capex(catalog: Catalog, server: Server, goods: float) -> int:
    """Fabric NICs a server does not ship with, per server (the shipped servers' prices
    include theirs)."""
    if server.fabric.nics_included:
        return 0
    nic = nic_for(catalog, server)
    return server.fabric.nics * to_money(nic.price * goods) if nic is not None else 0


def nic_for(catalog: Catalog, server: Server) -> NetworkNic | None:
    """The cheapest catalogue NIC of the server's fabric kind and at least its rate."""
    if fabric_class_id(server) is None:
        return None
    kind = RDMA_SWITCH_FABRIC[server.fabric.kind]
    fits = [
        n for n in catalog.nics.values() if kind in n.fabric and n.gbps >= server.fabric.nic_gbps
    ]
    return min(fits, key=lambda n: (n.price, n.id), default=None)


def storage_kinds(catalog: Catalog, goods: float) -> tuple[ir.StorageKind, ...]:
    """Every storage node of the catalogue: the model mixes them to fit each site's need."""
    return tuple(
        ir.StorageKind(
            id=node.id,
            capacity_gb=int(node.capacity_tb * 1000),
            price=to_money(node.price * goods),
            power_w=round(node.power_w),
            rack_units=node.rack_units,
        )
        for node in sorted(catalog.storage.values(), key=lambda n: n.id)
    )


def storage_need_gb(
    kind: str,
    checkpoint_bytes: float,
    copies: int,
    dataset_gb: float | None,
    fill_fraction: float = 1.0,
) -> int:
    """The usable capacity a workload needs on its site's storage (H16): what it keeps over
    the most the storage may be filled (`Params.storage_fill_fraction`). Training keeps
    `copies` full checkpoints (weights + optimizer state) and its dataset; a service keeps
    its weights."""
    kept = 1 if kind == "inference" else copies
    data_gb = checkpoint_bytes * kept / 1e9 + (dataset_gb or 0.0)
    return math.ceil(data_gb / fill_fraction)
