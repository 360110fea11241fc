"""The optimiser's model as a plain MILP, solved by HiGHS (highspy) and CBC (PuLP).

This is an independent translation of `gpusolve.optimize.ir.Instance`, written from the
IR's contract and the CP-SAT model's documented semantics, not from its code objects:

* a binary per (owned option, placement) and per cloud option, exactly one per workload;
* integer servers per (SKU, site) covering each time slot (day, night): work that runs
  always counts in both slots, so day and night work share servers;
* a binary `used[site]`: every choice at the site implies it and it implies some choice;
  it carries the site's fixed bandwidth cost;
* racks counted per maximal fill pattern over server shapes (power, rack units) of the
  SKUs some option places at the site; a site with more patterns than the optimiser's
  `pattern_limit` gets the same per-rack fallback as the optimiser (open flag and counts
  per shape, open racks first with non-increasing power);
* racks <= available, budgets on capex and on spend over the horizon;
* objective: capex + horizon x (rent + energy + bandwidth) + cloud + penalties;
* the cluster network and storage (issue 24): per site and fabric class, one switch or a
  two-tier fat tree sized from the ports of jobs across servers (leaves x down >= ports,
  spines x radix >= leaves x up, links = ports + leaves x up); storage nodes whose capacity
  holds what the workloads there keep; a ToR per rack; switches and storage fit with the
  servers in the racks (usable + reserve, less the ToR) or in racks of their own.

The same options are dropped as dominated (for min-tco: same workload and SKU, a subset
of the slots, no more servers, no more penalty, placements at least as good), fills are
maximal within per-shape caps (the most servers of a shape the site could need), and the
same variable bounds are used, so the three solvers see the same model; `run.py` compares
the column counts with the optimiser's own build and reports any difference. Peer solutions are
read back into an `ir.Solution` and checked by `gpusolve.optimize.validate.check`.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    Choice,
    CloudOption,
    Costs,
    FabricCount,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
    Solution,
)
from gpusolve.optimize.validate import recompute_network, recompute_storage

PATTERN_LIMIT = 2000  # the optimiser's default per-site pattern budget (BuildOptions)
SLOTS = ("day", "night")
INF = float("inf")

Shape = tuple[int, int]  # (power_w, rack_units)


# --------------------------------------------------------------------------- MILP


@dataclass
class Milp:
    """A minimisation MILP with integer data: columns, sparse rows, objective."""

    names: list[str] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    rows: list[tuple[list[int], list[int], float, float]] = field(default_factory=list)

    def col(self, name: str, lower: int, upper: float, integer: bool = True, cost: int = 0) -> int:
        self.names.append(name)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        self.cost.append(cost)
        return len(self.names) - 1

    def row(self, terms: Sequence[tuple[int, int]], lo: float, hi: float) -> None:
        merged: dict[int, int] = defaultdict(int)
        for j, a in terms:
            merged[j] += a
        kept = [(j, a) for j, a in merged.items() if a != 0]
        self.rows.append(([j for j, _ in kept], [a for _, a in kept], lo, hi))

    def add_cost(self, j: int, c: int) -> None:
        self.cost[j] += c

    def objective(self, values: Sequence[int]) -> int:
        return sum(c * v for c, v in zip(self.cost, values, strict=True))


# --------------------------------------------------------------------------- patterns


def fits(sku: Sku, site: Site) -> bool:
    return (
        site.cooling in sku.cooling
        and sku.power_w <= site.rack_w
        and sku.rack_units <= site.rack_units
    )


def per_rack(shape: Shape, rack_w: int, rack_units: int) -> int:
    power, units = shape
    by_units = rack_units // units
    return by_units if power <= 0 else min(by_units, rack_w // power)


def maximal_fills(
    shapes: Sequence[Shape], caps: Sequence[int], rack_w: int, rack_units: int, limit: int
) -> list[tuple[int, ...]] | None:
    """All maximal non-empty fills within per-shape caps (the most servers of a shape the
    site could need): no shape below its cap fits once more. None past `limit`."""
    out: list[tuple[int, ...]] = []
    for fill in _fills(shapes, caps, (), rack_w, rack_units):
        if any(fill):
            out.append(fill)
            if len(out) > limit:
                return None
    return out


def _fills(
    shapes: Sequence[Shape], caps: Sequence[int], prefix: tuple[int, ...], w: int, u: int
) -> Iterator[tuple[int, ...]]:
    i = len(prefix)
    if i == len(shapes):
        if all(k >= c or p > w or q > u for (p, q), c, k in zip(shapes, caps, prefix, strict=True)):
            yield prefix
        return
    power, units = shapes[i]
    top = min(caps[i], u // units, w // power if power > 0 else u // units)
    last = i == len(shapes) - 1  # below the top count one more item of it would fit
    for k in range(top, top - 1 if last else -1, -1):
        yield from _fills(shapes, caps, (*prefix, k), w - k * power, u - k * units)


# --------------------------------------------------------------------------- pruning


def _dominates(a: OwnedOption, b: OwnedOption) -> bool:
    """For min-tco only cost matters: fewer slots, servers and penalty, same sites."""
    if not (
        set(SLOTS_COVERED[a.slot]) <= set(SLOTS_COVERED[b.slot])
        and a.servers <= b.servers
        and a.penalty <= b.penalty
        and a.violates <= b.violates
    ):
        return False
    mine = {p.site: p for p in a.placements}
    return all(
        (q := mine.get(p.site)) is not None and q.penalty <= p.penalty and q.violates <= p.violates
        for p in b.placements
    )


def prune(options: Sequence[OwnedOption]) -> list[OwnedOption]:
    """Drop owned options dominated within (workload, SKU); of equals keep the first."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, o in enumerate(options):
        groups[(o.workload, o.sku)].append(i)
    drop: set[int] = set()
    for members in groups.values():
        for i in members:
            for j in members:
                a, b = options[j], options[i]
                if i != j and _dominates(a, b) and (j < i or not _dominates(b, a)):
                    drop.add(i)
                    break
    return [o for i, o in enumerate(options) if i not in drop]


def prune_cloud(options: Sequence[CloudOption]) -> list[CloudOption]:
    def dom(a: CloudOption, b: CloudOption) -> bool:
        return a.cost_total <= b.cost_total and a.penalty <= b.penalty and a.violates <= b.violates

    keep = []
    for i, b in enumerate(options):
        beaten = any(
            j != i and a.workload == b.workload and dom(a, b) and (j < i or not dom(b, a))
            for j, a in enumerate(options)
        )
        if not beaten:
            keep.append(b)
    return keep


# --------------------------------------------------------------------------- translation


@dataclass
class SiteCols:
    site: Site
    shapes: list[Shape]
    members: list[list[str]]  # SKU ids per shape, sorted
    fills: list[tuple[int, ...]]  # pattern mode
    racks: list[int]  # column per fill (pattern mode)
    bins: list[tuple[int, list[int]]]  # (open column, count columns) per rack (bin mode)


@dataclass
class Translation:
    instance: Instance
    milp: Milp
    owned: list[tuple[OwnedOption, Placement, int]]
    cloud: list[tuple[CloudOption, int]]
    servers: dict[tuple[str, str], int]
    used: dict[str, int]
    sites: dict[str, SiteCols]
    # (site, class) -> (ports, single, two, leaves, spines); (site, kind) -> nodes; site ->
    # racks for switches and storage alone
    fabric: dict[tuple[str, str], tuple[int, int, int, int, int]] = field(default_factory=dict)
    storage: dict[tuple[str, str], int] = field(default_factory=dict)
    infra_racks: dict[str, int] = field(default_factory=dict)

    @property
    def bin_sites(self) -> int:
        return sum(1 for s in self.sites.values() if s.bins)

    @property
    def patterns(self) -> int:
        return sum(len(s.fills) for s in self.sites.values())


def translate(instance: Instance, pattern_limit: int = PATTERN_LIMIT) -> Translation:
    m = Milp()
    options = [
        (o, tuple(p for p in o.placements if fits(instance.skus[o.sku], instance.sites[p.site])))
        for o in instance.owned
        if not o.violates
    ]
    kept = prune([_with(o, ps) for o, ps in options if ps])
    cloud_opts = prune_cloud([c for c in instance.cloud if not c.violates])
    owned = [(o, p, m.col(f"y[{o.key}@{p.site}]", 0, 1)) for o in kept for p in o.placements]
    cloud = [(c, m.col(f"y[{c.key}]", 0, 1)) for c in cloud_opts]
    t = Translation(instance, m, owned, cloud, {}, {}, {})
    _choices(t)
    ubs = _servers(t)
    _used(t)
    for site_id in sorted(t.used):
        _packing(t, site_id, ubs, pattern_limit)
    infra = _infrastructure(t)
    _costs_and_budgets(t, infra)
    return t


def _with(o: OwnedOption, placements: tuple[Placement, ...]) -> OwnedOption:
    return dataclasses.replace(o, placements=placements)


def _choices(t: Translation) -> None:
    per: dict[str, list[int]] = {w: [] for w in t.instance.workloads}
    for o, p, j in t.owned:
        per[o.workload].append(j)
        # Energy above idle while the workload runs (zero on generated instances).
        t.milp.add_cost(j, o.penalty + p.penalty + p.busy_energy)
    for c, j in t.cloud:
        per[c.workload].append(j)
        t.milp.add_cost(j, c.cost_total + c.penalty)
    for cols in per.values():
        t.milp.row([(j, 1) for j in cols], 1, 1)


def _servers(t: Translation) -> dict[tuple[str, str], int]:
    """n[sku, site] >= each slot's demand; bound: the worst slot's sum over workloads of
    the largest option placeable there."""
    groups: dict[tuple[str, str], list[tuple[OwnedOption, int]]] = defaultdict(list)
    for o, p, j in t.owned:
        groups[(o.sku, p.site)].append((o, j))
    ubs: dict[tuple[str, str], int] = {}
    for key in sorted(groups):
        terms = {s: [(o, j) for o, j in groups[key] if s in SLOTS_COVERED[o.slot]] for s in SLOTS}
        ub = max(_worst(terms[s]) for s in SLOTS)
        n = t.milp.col(f"n[{key[0]}@{key[1]}]", 0, ub)
        t.servers[key] = n
        ubs[key] = ub
        seen: set[tuple[int, ...]] = set()
        for s in SLOTS:
            sig = tuple(j for _, j in terms[s])
            if sig and sig not in seen:
                seen.add(sig)
                t.milp.row([(j, o.servers) for o, j in terms[s]] + [(n, -1)], -INF, 0)
    return ubs


def _worst(terms: Sequence[tuple[OwnedOption, int]]) -> int:
    most: dict[str, int] = defaultdict(int)
    for o, _ in terms:
        most[o.workload] = max(most[o.workload], o.servers)
    return sum(most.values())


def _used(t: Translation) -> None:
    by_site: dict[str, list[int]] = defaultdict(list)
    for _, p, j in t.owned:
        by_site[p.site].append(j)
    for site in sorted(by_site):
        u = t.milp.col(f"used[{site}]", 0, 1)
        t.used[site] = u
        for j in by_site[site]:
            t.milp.row([(j, 1), (u, -1)], -INF, 0)
        t.milp.row([(u, 1)] + [(j, -1) for j in by_site[site]], -INF, 0)


def _shapes_at(t: Translation, site: Site) -> tuple[list[Shape], list[list[str]]]:
    skus = sorted({o.sku for o, p, _ in t.owned if p.site == site.id})
    groups: dict[Shape, list[str]] = defaultdict(list)
    for k in skus:
        sku = t.instance.skus[k]
        groups[(sku.power_w, sku.rack_units)].append(k)
    shapes = sorted(groups, reverse=True)
    return shapes, [sorted(groups[s]) for s in shapes]


def _packing(t: Translation, site_id: str, ubs: dict[tuple[str, str], int], limit: int) -> None:
    site = t.instance.sites[site_id]
    shapes, members = _shapes_at(t, site)
    shape_ub = [sum(ubs.get((k, site_id), 0) for k in group) for group in members]
    total_ub = sum(
        math.ceil(d / per_rack(s, site.rack_w, site.rack_units))
        for s, d in zip(shapes, shape_ub, strict=True)
    )
    total_ub = min(total_ub, site.racks_available)
    caps = [
        min(per_rack(s, site.rack_w, site.rack_units), d)
        for s, d in zip(shapes, shape_ub, strict=True)
    ]
    fills = maximal_fills(shapes, caps, site.rack_w, site.rack_units, limit)
    cols = SiteCols(site, shapes, members, [], [], [])
    t.sites[site_id] = cols
    if fills is not None:
        slots = _pattern_cols(t, cols, fills, shape_ub, total_ub)
        total = cols.racks
    else:
        slots = _bin_cols(t, cols, total_ub)
        total = [o for o, _ in cols.bins]
    for h, group in enumerate(members):
        demand = [(t.servers[(k, site_id)], -1) for k in group]
        t.milp.row(slots[h] + demand, 0, INF)
    t.milp.row([(j, 1) for j in total], -INF, site.racks_available)
    t.milp.row([(j, 1) for j in total] + [(t.used[site_id], -total_ub)], -INF, 0)
    h = t.instance.horizon_months
    for j in total:
        t.milp.add_cost(j, h * site.rack_rent_month)


def _pattern_cols(
    t: Translation, cols: SiteCols, fills: list[tuple[int, ...]], shape_ub: list[int], total_ub: int
) -> list[list[tuple[int, int]]]:
    slots: list[list[tuple[int, int]]] = [[] for _ in cols.shapes]
    for i, fill in enumerate(fills):
        alone = max(math.ceil(shape_ub[h] / c) for h, c in enumerate(fill) if c)
        r = t.milp.col(f"r[{cols.site.id}#{i}]", 0, min(total_ub, alone))
        cols.fills.append(fill)
        cols.racks.append(r)
        for h, c in enumerate(fill):
            if c:
                slots[h].append((r, c))
    return slots


def _bin_cols(t: Translation, cols: SiteCols, total_ub: int) -> list[list[tuple[int, int]]]:
    site = cols.site
    slots: list[list[tuple[int, int]]] = [[] for _ in cols.shapes]
    previous: tuple[int, list[int]] | None = None
    for b in range(total_ub):
        o = t.milp.col(f"open[{site.id}#{b}]", 0, 1)
        counts = [
            t.milp.col(f"z[{site.id}#{b},{h}]", 0, per_rack(s, site.rack_w, site.rack_units))
            for h, s in enumerate(cols.shapes)
        ]
        power = [(c, s[0]) for c, s in zip(counts, cols.shapes, strict=True)]
        units = [(c, s[1]) for c, s in zip(counts, cols.shapes, strict=True)]
        t.milp.row([*power, (o, -site.rack_w)], -INF, 0)
        t.milp.row([*units, (o, -site.rack_units)], -INF, 0)
        if previous is not None:
            t.milp.row([(o, 1), (previous[0], -1)], -INF, 0)
            before = [(c, -s[0]) for c, s in zip(previous[1], cols.shapes, strict=True)]
            t.milp.row(power + before, -INF, 0)
        for h, c in enumerate(counts):
            slots[h].append((c, 1))
        cols.bins.append((o, counts))
        previous = (o, counts)
    return slots


def _site_racks(t: Translation, site_id: str) -> list[int]:
    cols = t.sites[site_id]
    return cols.racks + [o for o, _ in cols.bins]


def _infrastructure(t: Translation) -> list[tuple[int, int]]:
    """Fabric, storage and ToR columns and rows; returns their capex terms (col, price)."""
    inst, m = t.instance, t.milp
    capex: list[tuple[int, int]] = []
    need: dict[tuple[str, str], list[tuple[OwnedOption, int, int]]] = defaultdict(list)
    keep: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for o, p, j in t.owned:
        sku = inst.skus[o.sku]
        if o.spans and sku.fabric in inst.fabrics:
            need[(p.site, str(sku.fabric))].append((o, o.servers * sku.nics, j))
        if o.storage_gb and inst.sites[p.site].storage:
            keep[p.site].append((j, o.storage_gb))
    room_units: dict[str, list[tuple[int, int]]] = defaultdict(list)
    room_w: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (site, cls), terms in sorted(need.items()):
        f = inst.fabrics[cls]
        ub = 0
        for slot in SLOTS:
            most: dict[str, int] = defaultdict(int)
            for o, ports, _ in terms:
                if slot in SLOTS_COVERED[o.slot]:
                    most[o.workload] = max(most[o.workload], ports)
            ub = max(ub, sum(most.values()))
        if ub == 0:
            continue
        leaves_ub = max(2, math.ceil(ub / f.down_ports))
        spines_ub = max(1, math.ceil(f.up_ports * leaves_ub / f.radix))
        name = f"{site}/{cls}"
        ports = m.col(f"ports[{name}]", 0, ub)
        single = m.col(f"single[{name}]", 0, 1)
        two = m.col(f"two[{name}]", 0, 1)
        leaves = m.col(f"leaves[{name}]", 0, leaves_ub)
        spines = m.col(f"spines[{name}]", 0, spines_ub)
        for slot in SLOTS:
            row = [(j, n) for o, n, j in terms if slot in SLOTS_COVERED[o.slot]]
            if row:
                m.row([*row, (ports, -1)], -INF, 0)
        m.row([(single, 1), (two, 1)], -INF, 1)
        m.row([(ports, 1), (single, -f.radix), (leaves, -f.down_ports)], -INF, 0)
        m.row([(leaves, 1), (two, -leaves_ub)], -INF, 0)
        m.row([(leaves, 1), (two, -2)], 0, INF)
        m.row([(spines, f.radix), (leaves, -f.up_ports)], 0, INF)
        m.row([(spines, 1), (two, -spines_ub)], -INF, 0)
        t.fabric[(site, cls)] = (ports, single, two, leaves, spines)
        for j in (single, leaves, spines):
            capex.append((j, f.switch_price))
            room_units[site].append((j, f.switch_units))
            room_w[site].append((j, f.switch_power_w))
        capex += [(ports, f.link_price), (leaves, f.link_price * f.up_ports)]
    for site, terms in sorted(keep.items()):
        total = sum(gb for _, gb in terms)
        capacity = []
        for kind in inst.sites[site].storage:
            n = m.col(f"storage[{site}/{kind.id}]", 0, max(1, math.ceil(total / kind.capacity_gb)))
            t.storage[(site, kind.id)] = n
            capacity.append((n, -kind.capacity_gb))
            capex.append((n, kind.price))
            room_units[site].append((n, kind.rack_units))
            room_w[site].append((n, kind.power_w))
        m.row([*terms, *capacity], -INF, 0)
    for (k, _), n in t.servers.items():
        capex.append((n, inst.skus[k].nic_capex))
    for site_id in sorted(t.sites):
        site = inst.sites[site_id]
        racks = _site_racks(t, site_id)
        capex += [(j, site.rack_network_capex) for j in racks]
        if site_id not in room_units:
            continue
        most = sum(int(m.upper[j]) for j, _ in room_units[site_id])
        extra = m.col(f"infra_racks[{site_id}]", 0, most)
        t.infra_racks[site_id] = extra
        units = [(n, inst.skus[k].rack_units) for (k, s), n in t.servers.items() if s == site_id]
        power = [(n, inst.skus[k].power_w) for (k, s), n in t.servers.items() if s == site_id]
        room_u = max(0, site.rack_units + site.reserved_units - site.rack_network_units)
        room_p = max(0, site.rack_w + site.reserved_w - site.rack_network_w)
        m.row(
            [*units, *room_units[site_id], *[(j, -room_u) for j in racks],
             (extra, -site.rack_units)], -INF, 0,
        )  # fmt: skip
        m.row(
            [*power, *room_w[site_id], *[(j, -room_p) for j in racks], (extra, -site.rack_w)],
            -INF,
            0,
        )
        m.row([*[(j, 1) for j in racks], (extra, 1)], -INF, site.racks_available)
        m.add_cost(extra, inst.horizon_months * site.rack_rent_month)
    for j, c in capex:
        m.add_cost(j, c)
    return capex


def _costs_and_budgets(t: Translation, infra: Sequence[tuple[int, int]] = ()) -> None:
    inst = t.instance
    h = inst.horizon_months
    capex: list[tuple[int, int]] = list(infra)
    spend: list[tuple[int, int]] = []
    for (k, s), n in t.servers.items():
        capex.append((n, inst.skus[k].capex))
        spend.append((n, h * inst.sites[s].energy_month[k]))
    for s, u in t.used.items():
        spend.append((u, h * inst.sites[s].bandwidth_month))
    for s, cols in t.sites.items():
        rent = h * inst.sites[s].rack_rent_month
        spend += [(j, rent) for j in cols.racks] + [(o, rent) for o, _ in cols.bins]
    spend += [(j, h * inst.sites[s].rack_rent_month) for s, j in t.infra_racks.items()]
    spend += [(j, c.cost_total) for c, j in t.cloud]
    spend += [(j, p.busy_energy) for _, p, j in t.owned if p.busy_energy]
    for (k, s), n in t.servers.items():  # rent is costed in _packing, cloud in _choices
        t.milp.add_cost(n, inst.skus[k].capex + h * inst.sites[s].energy_month[k])
    for s, u in t.used.items():
        t.milp.add_cost(u, h * inst.sites[s].bandwidth_month)
    if inst.capex_max is not None:
        t.milp.row(capex, -INF, inst.capex_max)
    if inst.monthly_max is not None:
        t.milp.row(spend, -INF, h * inst.monthly_max)


# --------------------------------------------------------------------------- reading


def to_solution(t: Translation, values: Sequence[int], status: str, wall: float) -> Solution:
    """A peer's answer as an `ir.Solution` the optimiser's validator can check."""
    inst = t.instance
    choices = [Choice(o.workload, o.key, p.site) for o, p, j in t.owned if values[j]]
    choices += [Choice(c.workload, c.key, None) for c, j in t.cloud if values[j]]
    order = {w: i for i, w in enumerate(inst.workloads)}
    choices.sort(key=lambda c: order[c.workload])
    servers = {key: values[j] for key, j in t.servers.items() if values[j] > 0}
    racks: dict[tuple[str, tuple[tuple[str, int], ...]], int] = defaultdict(int)
    for site_id, cols in t.sites.items():
        vectors = [f for f, j in zip(cols.fills, cols.racks, strict=True) for _ in range(values[j])]
        vectors += [tuple(values[c] for c in cs) for o, cs in cols.bins if values[o]]
        left = {k: servers.get((k, site_id), 0) for group in cols.members for k in group}
        for vector in vectors:
            racks[(site_id, _deal(vector, cols.members, left))] += 1
    for site_id, j in t.infra_racks.items():
        if values[j]:
            racks[(site_id, ())] += values[j]
    fabric = {
        key: FabricCount(values[p], values[s], values[lv], values[sp])
        for key, (p, s, _, lv, sp) in t.fabric.items()
        if values[p] or values[s] or values[lv] or values[sp]
    }
    storage = {key: values[j] for key, j in t.storage.items() if values[j]}
    costs = _costs(inst, choices, servers, racks)
    shell = Solution(status="feasible", servers=servers, racks=dict(racks), fabric=fabric)
    shell = dataclasses.replace(shell, storage=storage)
    network = recompute_network(inst, shell)
    stored = recompute_storage(inst, shell)
    costs = dataclasses.replace(
        costs, capex=costs.capex + network + stored, network=network, storage=stored
    )
    objective = t.milp.objective(values)
    return Solution(
        status="optimal" if status == "optimal" else "feasible",
        choices=tuple(choices),
        servers=servers,
        racks=dict(racks),
        costs=costs,
        objective_value=objective,
        wall_s=wall,
        fabric=fabric,
        storage=storage,
    )


def _deal(
    vector: tuple[int, ...], members: list[list[str]], left: dict[str, int]
) -> tuple[tuple[str, int], ...]:
    fill: dict[str, int] = {}
    for free, group in zip(vector, members, strict=True):
        for k in group:
            take = min(free, left[k])
            if take:
                fill[k] = fill.get(k, 0) + take
                left[k] -= take
                free -= take
    return tuple(sorted(fill.items()))


def _costs(
    inst: Instance,
    choices: list[Choice],
    servers: dict[tuple[str, str], int],
    racks: dict[tuple[str, tuple[tuple[str, int], ...]], int],
) -> Costs:
    h = inst.horizon_months
    owned = {o.key: o for o in inst.owned}
    cloud = {c.key: c for c in inst.cloud}
    penalties = cloud_total = busy = 0
    sites: set[str] = set()
    for c in choices:
        if c.site is None:
            cloud_total += cloud[c.option].cost_total
            penalties += cloud[c.option].penalty
        else:
            o = owned[c.option]
            placement = next(p for p in o.placements if p.site == c.site)
            penalties += o.penalty + placement.penalty
            busy += placement.busy_energy
            sites.add(c.site)
    return Costs(
        capex=sum(inst.skus[k].capex * n for (k, _), n in servers.items()),
        rack_rent=sum(h * inst.sites[s].rack_rent_month * n for (s, _), n in racks.items()),
        energy=busy + sum(h * inst.sites[s].energy_month[k] * n for (k, s), n in servers.items()),
        bandwidth=sum(h * inst.sites[s].bandwidth_month for s in sites),
        cloud=cloud_total,
        penalties=penalties,
    )


# --------------------------------------------------------------------------- solvers


@dataclass
class PeerResult:
    solver: str
    status: str  # optimal | feasible | infeasible | unknown | error
    objective: int | None  # recomputed exactly from the rounded solution
    reported: float | None  # what the solver said
    bound: float | None
    build_s: float
    solve_s: float
    values: list[int] | None = None
    message: str = ""

    @property
    def total_s(self) -> float:
        return self.build_s + self.solve_s


def solve_highs(t: Translation, time_limit: float, seed: int = 0) -> PeerResult:
    """HiGHS with a zero relative gap: proven optimal like CP-SAT (default is 1e-4)."""
    import highspy
    import numpy as np

    start = time.perf_counter()
    m = t.milp
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(m.names), len(m.rows)
    lp.col_cost_ = np.array(m.cost, dtype=float)
    lp.col_lower_ = np.array(m.lower, dtype=float)
    lp.col_upper_ = np.array([highspy.kHighsInf if u == INF else u for u in m.upper], dtype=float)
    lp.row_lower_ = np.array([-highspy.kHighsInf if r[2] == -INF else r[2] for r in m.rows])
    lp.row_upper_ = np.array([highspy.kHighsInf if r[3] == INF else r[3] for r in m.rows])
    starts = np.cumsum([0] + [len(r[0]) for r in m.rows])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = starts.astype(np.int32)
    lp.a_matrix_.index_ = np.array([j for r in m.rows for j in r[0]], dtype=np.int32)
    lp.a_matrix_.value_ = np.array([a for r in m.rows for a in r[1]], dtype=float)
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in m.integer
    ]
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("random_seed", seed)
    h.passModel(lp)
    built = time.perf_counter()
    h.run()
    solved = time.perf_counter()
    status = h.getModelStatus()
    info = h.getInfo()
    name = h.modelStatusToString(status).lower()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    values = [round(v) for v in h.getSolution().col_value] if has_sol else None
    state = (
        "optimal"
        if status == highspy.HighsModelStatus.kOptimal
        else "infeasible"
        if status == highspy.HighsModelStatus.kInfeasible
        else ("feasible" if has_sol else "unknown")
    )
    return PeerResult(
        "highs",
        state,
        m.objective(values) if values is not None else None,
        info.objective_function_value if has_sol else None,
        info.mip_dual_bound,
        built - start,
        solved - built,
        values,
        name,
    )


def solve_cbc(t: Translation, time_limit: float) -> PeerResult:
    """CBC through PuLP (as SkyPilot and Mélange use it), zero relative gap."""
    import pulp

    start = time.perf_counter()
    m = t.milp
    prob = pulp.LpProblem("gpusolve", pulp.LpMinimize)
    cols = [_pulp_var(prob, j, m) for j in range(len(m.names))]
    prob += pulp.LpAffineExpression([(cols[j], c) for j, c in enumerate(m.cost) if c])
    for i, (idx, coef, lo, hi) in enumerate(m.rows):
        expr = pulp.LpAffineExpression([(cols[j], a) for j, a in zip(idx, coef, strict=True)])
        prob += _pulp_row(expr, lo, hi, f"c{i}")
    built = time.perf_counter()
    with warnings.catch_warnings():  # PuLP 3.3 deprecates the bundled-CBC class name
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=0.0)
    prob.solve(solver)
    solved = time.perf_counter()
    has_sol = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    values = [round(v.varValue or 0.0) for v in cols] if has_sol else None
    state = {
        pulp.LpSolutionOptimal: "optimal",
        pulp.LpSolutionIntegerFeasible: "feasible",
        pulp.LpSolutionInfeasible: "infeasible",
    }.get(prob.sol_status, "unknown")
    reported = pulp.value(prob.objective) if has_sol else None
    return PeerResult(
        "cbc",
        state,
        m.objective(values) if values is not None else None,
        reported,
        None,
        built - start,
        solved - built,
        values,
        pulp.LpStatus[prob.status],
    )


def _pulp_var(prob: Any, j: int, m: Milp) -> Any:
    import pulp

    upper = None if m.upper[j] == INF else m.upper[j]
    cat = pulp.LpInteger if m.integer[j] else pulp.LpContinuous
    if hasattr(prob, "add_variable"):  # PuLP >= 3.3; direct LpVariable(...) is deprecated
        return prob.add_variable(f"x{j}", m.lower[j], upper, cat=cat)
    return pulp.LpVariable(f"x{j}", lowBound=m.lower[j], upBound=upper, cat=cat)


def _pulp_row(expr: Any, lo: float, hi: float, name: str) -> Any:
    import pulp

    if lo == hi:
        return pulp.LpConstraint(expr, pulp.LpConstraintEQ, name, lo)
    if lo == -INF:
        return pulp.LpConstraint(expr, pulp.LpConstraintLE, name, hi)
    if hi == INF:
        return pulp.LpConstraint(expr, pulp.LpConstraintGE, name, lo)
    raise ValueError("two-sided rows are not used by this translation")
