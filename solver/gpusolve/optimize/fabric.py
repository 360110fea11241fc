"""The cluster network inside the model: exact, linear, per site.

For every site and fabric class (the switch and link that serve one kind of server NIC,
`ir.FabricClass`) the ports to cable are the NICs of the servers that run jobs across
servers there, in the busiest slot (day and night work share the fabric as they share the
servers). They are served by one switch (`single`: up to `radix` ports), by one of the class's
smaller, cheaper switches (`small[i]`: up to its radix; a 32-port switch for four servers
rather than a 256-port one), by a two-tier fat tree (`two`): `leaves` with `down_ports`
each towards servers and the rest up, and enough `spines` to take every leaf's uplinks;
or, where the class has a NIC-to-NIC cable, by none (`direct`):

    ports + cap * direct >= each slot's ports        (every server NIC gets a port ...)
    ports <= radix * single + sum r_i * small_i + down * leaves
    single + sum small_i + two + direct <= 1,  2 * two <= leaves <= L_max * two
    radix * spines >= up * leaves,  spines <= S_max * two
    links = ports + up * leaves                      (server-leaf plus leaf-spine)

Direct links (back-to-back): two servers cable NIC i to NIC i of the other and need no
switch. RDMA runs over such a cable as over a switch: RoCE is Ethernet between two ports,
and an InfiniBand pair needs only a subnet manager on one host ("all InfiniBand networks
must have a subnet manager running ... even if two machines are connected directly with no
switch involved", Red Hat, "Installing and configuring the OpenSM InfiniBand subnet
manager", access.redhat.com/node/7087953). The rule: `direct` only where, in every slot,
the jobs across servers there use two servers in all (a third server would need a port on
each of the other two: that is a switch's job); then each server model with such a job
is one pair, cabled once (its NICs' worth of cables), whichever slot uses it, since the
day's and the night's jobs of one model share its servers as they share the fabric.

With `down = up` the tree is non-blocking; `requirements.network.oversubscription` sets
`down / up`. A rail-optimised cluster (NIC i of every server on leaf i) needs the same
leaf count whenever a rail's servers fill whole leaves; this model counts ports, the lower
figure otherwise. Beyond `radix` leaves a real non-blocking fabric needs a third tier: the
count here stays the two-tier one (a lower bound on what such a fabric costs).

Each rack also gets its own parts (`Site.rack_network_*`): a front-end top-of-rack and an
out-of-band management switch with their uplinks, and PDUs where the rent lacks them;
servers whose NICs are not in their price buy them (`Sku.nic_capex`). A site whose jobs
span servers keeps their checkpoints and datasets on shared storage nodes (H16): nodes x
capacity >= what the workloads there keep. Switches and storage nodes live in the racks'
reserve (`candidates/reserve.py`) and whatever room the servers leave: with the servers
they must fit the site's racks (less each rack's own parts), else the site rents racks for
them alone rather than overfilling any.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.fabric_floor import add_floors
from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    FabricClass,
    FabricCount,
    Instance,
    OwnedOption,
    Placement,
    Site,
    StorageKind,
    SwitchOption,
)

Var = cp_model.IntVar
Expr = cp_model.LinearExpr

SLOTS = ("day", "night")


class _Choice(Protocol):
    """What this module reads of a model's owned choice (`model.OwnedVar`)."""

    @property
    def option(self) -> OwnedOption: ...

    @property
    def placement(self) -> Placement: ...

    @property
    def var(self) -> Var: ...


@dataclass(frozen=True)
class FabricVars:
    """One site's fabric of one class."""

    site: str
    fabric: FabricClass
    ports: Var
    single: Var
    two: Var
    leaves: Var
    spines: Var
    small: tuple[Var, ...] = ()  # one Bool per `FabricClass.small` switch
    direct: Var | None = None  # Bool: two servers back-to-back, no switch
    cables: Var | None = None  # the direct NIC-to-NIC cables

    def variables(self) -> list[Var]:
        extra = [v for v in (self.direct, self.cables) if v is not None]
        return [self.ports, self.single, self.two, self.leaves, self.spines, *self.small, *extra]

    @property
    def switches(self) -> Expr:
        """The class's own switches (single, leaves, spines); `small` ones are apart."""
        return self.single + self.leaves + self.spines

    @property
    def links(self) -> Expr:
        return self.ports + self.fabric.up_ports * self.leaves

    def _small(self, field: str) -> Expr:
        values = [getattr(s, field) for s in self.fabric.small]
        return cp_model.LinearExpr.weighted_sum(list(self.small), values)

    @property
    def units(self) -> Expr:
        return self.fabric.switch_units * self.switches + self._small("units")

    @property
    def power_w(self) -> Expr:
        return self.fabric.switch_power_w * self.switches + self._small("power_w")

    @property
    def cost(self) -> Expr:
        cost = self.fabric.switch_price * self.switches + self.fabric.link_price * self.links
        cost = cost + self._small("price")
        if self.cables is not None:
            cost = cost + self.fabric.direct_link_price * self.cables
        return cost


@dataclass(frozen=True)
class FabricModel:
    """What `add_fabric` adds: the network capex, the fabric per (site, class), and per
    site the racks rented for switches alone when the servers' racks lack the reserve."""

    network: Expr
    fabric: dict[tuple[str, str], FabricVars]
    racks: dict[str, Var]
    storage: Expr  # shared-storage capex (checkpoints and datasets)
    storage_nodes: dict[tuple[str, str], Var]  # (site, storage kind)


@dataclass(frozen=True)
class _Need:
    workload: str
    slot: str  # the option's slot: always, day or night
    ports: int
    var: Var
    sku: str = ""
    servers: int = 0


def _demand(instance: Instance, owned: Sequence[_Choice]) -> dict[tuple[str, str], list[_Need]]:
    """(site, class) -> the ports each choice whose job spans servers on RDMA NICs of that
    class would cable there."""
    out: dict[tuple[str, str], list[_Need]] = defaultdict(list)
    for o in owned:
        sku = instance.skus[o.option.sku]
        if not o.option.spans or sku.fabric is None or sku.fabric not in instance.fabrics:
            continue
        ports = o.option.servers * sku.nics
        need = _Need(o.option.workload, o.option.slot, ports, o.var, sku.id, o.option.servers)
        out[(o.placement.site, sku.fabric)].append(need)
    return out


def _ports_bound(needs: Sequence[_Need]) -> int:
    """The busiest slot's ports: per workload its largest spanning choice, summed
    (exactly one choice per workload runs)."""
    best = 0
    for slot in SLOTS:
        per: dict[str, int] = defaultdict(int)
        for n in needs:
            if slot in SLOTS_COVERED[n.slot]:
                per[n.workload] = max(per[n.workload], n.ports)
        best = max(best, sum(per.values()))
    return best


def add_fabric(
    model: cp_model.CpModel,
    instance: Instance,
    owned: Sequence[_Choice],
    servers: Mapping[tuple[str, str], Var],
    racks: Mapping[str, Expr],
    available: Mapping[str, int] | None = None,
) -> FabricModel:
    """Fabric variables and constraints. `racks` is each site's racks for servers;
    `available`, where given, caps those plus the switch-only racks per site (the hard
    `racks:<site>` requirement)."""
    fabrics: dict[tuple[str, str], FabricVars] = {}
    terms: list[Expr] = []
    for (site, class_id), demand in sorted(_demand(instance, owned).items()):
        fabric = instance.fabrics[class_id]
        ub = _ports_bound(demand)
        if ub == 0:
            continue
        fv = _fabric_vars(model, site, fabric, ub, instance, demand)
        for slot in SLOTS:
            row = [n for n in demand if slot in SLOTS_COVERED[n.slot]]
            if row:
                ports = [n.ports for n in row]
                need = cp_model.LinearExpr.weighted_sum([n.var for n in row], ports)
                model.add(need <= fv.ports + (ub * fv.direct if fv.direct is not None else 0))
        fabrics[(site, class_id)] = fv
        terms.append(fv.cost)
        add_floors(model, fabric, fv.cost, demand, ub)
    # Servers of SKUs this instance does not know (a scenario's view of a shared purchase)
    # carry no NIC price here.
    nics = [(instance.skus[k].nic_capex, v) for (k, _), v in servers.items() if k in instance.skus]
    nics = [(c, v) for c, v in nics if c]
    if nics:
        terms.append(cp_model.LinearExpr.weighted_sum([v for _, v in nics], [c for c, _ in nics]))
    nodes = _storage(model, instance, owned)
    extra: dict[str, Var] = {}
    for site_id, total in sorted(racks.items()):
        if site_id not in instance.sites:
            continue
        per_rack = instance.sites[site_id].rack_network_capex
        if per_rack:
            terms.append(per_rack * total)
        here = {k: v for (k, s), v in servers.items() if s == site_id and k in instance.skus}
        mine = {kind: v for (s, kind), v in nodes.items() if s == site_id}
        more = _fits_reserve(model, instance, site_id, total, fabrics, mine, here)
        if more is not None:
            extra[site_id] = more
            if available is not None and site_id in available:
                model.add(total + more <= available[site_id])
    network: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for term in terms:
        network = network + term
    storage: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for (site_id, kind_id), var in nodes.items():
        storage = storage + storage_kinds(instance.sites[site_id])[kind_id].price * var
    return FabricModel(network, fabrics, extra, storage, nodes)


def with_infrastructure(
    instance: Instance, net: FabricModel, capex: Expr, rent: Expr
) -> tuple[Expr, Expr]:
    """`capex` with the network and storage, `rent` with the racks rented for them alone
    (charged as every rack is, for the contract's months)."""
    h = instance.horizon_months
    extra: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for site_id, var in sorted(net.racks.items()):
        site = instance.sites[site_id]
        extra = extra + finance.rent_months(h, site.rent_months) * site.rack_rent_month * var
    return capex + net.network + net.storage, rent + extra


def storage_kinds(site: Site) -> dict[str, StorageKind]:
    return {k.id: k for k in site.storage}


def _storage(
    model: cp_model.CpModel, instance: Instance, owned: Sequence[_Choice]
) -> dict[tuple[str, str], Var]:
    """Storage nodes per site and kind: their usable capacity together holds what every
    workload placed there keeps (checkpoints and datasets persist whatever the slot, so no
    day/night sharing). Several kinds mix: a small need buys a small node."""
    need: dict[str, list[tuple[int, Var]]] = defaultdict(list)
    for o in owned:
        site = instance.sites.get(o.placement.site)
        if o.option.storage_gb > 0 and site is not None and site.storage:
            need[site.id].append((o.option.storage_gb, o.var))
    nodes: dict[tuple[str, str], Var] = {}
    for site_id, terms in sorted(need.items()):
        total_gb = sum(gb for gb, _ in terms)  # a bound: every choice at once
        capacity: Expr = cp_model.LinearExpr.weighted_sum([], [])
        for kind in instance.sites[site_id].storage:
            ub = max(1, -(-total_gb // kind.capacity_gb))
            var = model.new_int_var(0, ub, f"storage_nodes[{site_id}/{kind.id}]")
            capacity = capacity + kind.capacity_gb * var
            nodes[(site_id, kind.id)] = var
        demand = cp_model.LinearExpr.weighted_sum([v for _, v in terms], [gb for gb, _ in terms])
        model.add(demand <= capacity)
    return nodes


def _fabric_vars(
    model: cp_model.CpModel,
    site: str,
    fabric: FabricClass,
    ub: int,
    instance: Instance,
    demand: Sequence[_Need],
) -> FabricVars:
    name = f"{site}/{fabric.id}"
    leaves_ub = max(2, math.ceil(ub / fabric.down_ports))
    spines_ub = max(1, math.ceil(fabric.up_ports * leaves_ub / fabric.radix))
    ports = model.new_int_var(0, ub, f"ports[{name}]")
    single = model.new_bool_var(f"single[{name}]")
    two = model.new_bool_var(f"two_tier[{name}]")
    leaves = model.new_int_var(0, leaves_ub, f"leaves[{name}]")
    spines = model.new_int_var(0, spines_ub, f"spines[{name}]")
    # Small switches that could hold some of the ports (one that could hold none is idle).
    small = tuple(model.new_bool_var(f"small[{name}/{s.id}]") for s in fabric.small)
    direct = _direct_vars(model, name, fabric, instance, demand)
    modes = single + two + sum(small)
    if direct is not None:
        modes = modes + direct[0]
    model.add(modes <= 1)
    held = cp_model.LinearExpr.weighted_sum(list(small), [s.radix for s in fabric.small])
    model.add(ports <= fabric.radix * single + held + fabric.down_ports * leaves)
    model.add(leaves <= leaves_ub * two)
    model.add(leaves >= 2 * two)
    model.add(fabric.radix * spines >= fabric.up_ports * leaves)
    model.add(spines <= spines_ub * two)
    on, cables = direct if direct is not None else (None, None)
    return FabricVars(site, fabric, ports, single, two, leaves, spines, small, on, cables)


def _direct_vars(
    model: cp_model.CpModel,
    name: str,
    fabric: FabricClass,
    instance: Instance,
    demand: Sequence[_Need],
) -> tuple[Var, Var] | None:
    """(direct, cables) where two servers back-to-back could serve every slot (module
    docstring), else None: on `direct`, each slot's jobs across servers use two servers in
    all, and each server model with such a job buys its NICs' worth of cables once."""
    if fabric.direct_link is None:
        return None
    most = {slot: sum(n.servers for n in demand if slot in SLOTS_COVERED[n.slot]) for slot in SLOTS}
    if min(n.servers for n in demand) > 2:
        return None
    direct = model.new_bool_var(f"direct[{name}]")
    for slot in SLOTS:
        row = [n for n in demand if slot in SLOTS_COVERED[n.slot]]
        if row and most[slot] > 2:
            used = cp_model.LinearExpr.weighted_sum([n.var for n in row], [n.servers for n in row])
            model.add(used <= 2 + (most[slot] - 2) * (1 - direct))
    skus = sorted({n.sku for n in demand})
    pairs = {sku: model.new_bool_var(f"pair[{name}/{sku}]") for sku in skus}
    for n in demand:
        model.add_implication(n.var, pairs[n.sku])
    nics = [instance.skus[sku].nics for sku in skus]
    ub = sum(nics)
    cables = model.new_int_var(0, ub, f"direct_links[{name}]")
    wanted = cp_model.LinearExpr.weighted_sum([pairs[s] for s in skus], nics)
    model.add(cables >= wanted - ub * (1 - direct))
    return direct, cables


def _fits_reserve(
    model: cp_model.CpModel,
    instance: Instance,
    site_id: str,
    racks: Expr,
    fabrics: Mapping[tuple[str, str], FabricVars],
    storage_nodes: Mapping[str, Var] | None = None,
    servers: Mapping[str, Var] | None = None,
) -> Var | None:
    """Fabric switches and storage nodes fit, with the servers, in the site's racks (each
    rack's usable capacity and its reserve, less its own parts), or in racks rented for them
    alone (loaded like any rack: to its usable kW and U). Counted over the site's racks
    together: a 1-2U switch or storage node fits whatever rack has the room, so the
    aggregate is what decides. Returns those racks' variable; None when the site has
    neither."""
    site = instance.sites[site_id]
    mine = [fv for (s, _), fv in fabrics.items() if s == site_id]
    if not mine and not storage_nodes:
        return None
    units: Expr = cp_model.LinearExpr.weighted_sum([], [])
    power: Expr = cp_model.LinearExpr.weighted_sum([], [])
    most = 0  # items the site could ever need: each extra rack holds at least one
    for fv in mine:
        units = units + fv.units
        power = power + fv.power_w
        most += 1 + _ub(fv.leaves) + _ub(fv.spines)
    kinds = storage_kinds(site)
    for kind_id, var in sorted((storage_nodes or {}).items()):
        units = units + kinds[kind_id].rack_units * var
        power = power + kinds[kind_id].power_w * var
        most += _ub(var)
    for sku_id, n in sorted((servers or {}).items()):
        units = units + instance.skus[sku_id].rack_units * n
        power = power + instance.skus[sku_id].power_w * n
    extra = model.new_int_var(0, most, f"switch_racks[{site_id}]")
    model.add(units <= rack_room_units(site) * racks + site.rack_units * extra)
    model.add(power <= rack_room_w(site) * racks + site.rack_w * extra)
    return extra


def rack_room_units(site: Site) -> int:
    """U of one rack of servers for servers, switches and storage: all of it but its own
    parts (ToR, management switch, PDUs)."""
    return max(0, site.rack_units + site.reserved_units - site.rack_network_units)


def rack_room_w(site: Site) -> int:
    """W of one rack of servers for servers, switches and storage: its usable draw plus the
    reserve the switches and storage live in, less its own parts."""
    return max(0, site.rack_w + site.reserved_w - site.rack_network_w)


def _ub(var: Var) -> int:
    return int(var.proto.domain[-1])


def small_switch(fabric: FabricClass, count: FabricCount) -> SwitchOption | None:
    """The small switch a solved fabric uses, if any."""
    return next((s for s in fabric.small if s.id == count.small), None)


def fabric_cost(fabric: FabricClass, count: FabricCount) -> int:
    """What `FabricVars.cost` charges for these counts (validation and cost lines)."""
    links = count.ports + fabric.up_ports * count.leaves
    own = fabric.switch_price * (count.single + count.leaves + count.spines)
    small = small_switch(fabric, count)
    cost = own + fabric.link_price * links + fabric.direct_link_price * count.direct_links
    return cost + (small.price if small is not None else 0)


def fabric_room(fabric: FabricClass, count: FabricCount) -> tuple[int, int]:
    """(U, W) of a solved fabric's switches."""
    own = count.single + count.leaves + count.spines
    small = small_switch(fabric, count)
    units = fabric.switch_units * own + (small.units if small is not None else 0)
    power = fabric.switch_power_w * own + (small.power_w if small is not None else 0)
    return units, power


def needed(fabric: FabricClass, ports: int) -> tuple[int, int, int]:
    """The cheapest (single, leaves, spines) of the class's own switch that serve `ports`
    server ports: the closed form of the model's choice without small switches or direct
    links, for tests and checks."""
    if ports == 0:
        return 0, 0, 0
    if ports <= fabric.radix:
        return 1, 0, 0
    leaves = max(2, math.ceil(ports / fabric.down_ports))
    spines = math.ceil(fabric.up_ports * leaves / fabric.radix)
    return 0, leaves, spines
