"""Turn a solved model into an `ir.Solution`: choices, counts, rack fills, costs, and
the requirements and capacities that bind."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence

from ortools.sat.python import cp_model

from gpusolve.optimize import binpack
from gpusolve.optimize.fabric import FabricVars
from gpusolve.optimize.ir import Choice, Costs, FabricCount, Instance, Solution, Status
from gpusolve.optimize.model import Built
from gpusolve.optimize.patterns import Shape

RackFill = tuple[tuple[str, int], ...]


def read_solution(
    built: Built,
    solver: cp_model.CpSolver,
    status: Status,
    objective: int,
    bound: int,
    wall: float,
) -> Solution:
    """Read a solver that holds a solution (check its status first: after INFEASIBLE,
    values silently read as 0)."""
    choices = _choices(built, solver)
    servers = {key: int(solver.value(v)) for key, v in built.servers.items()}
    servers = {k: v for k, v in servers.items() if v > 0}
    racks = _racks(built, solver, servers)
    for site, var in built.switch_racks.items():
        if solver.value(var) > 0:  # racks that hold network switches and no server
            racks[(site, ())] = int(solver.value(var))
    costs = Costs(
        capex=solver.value(built.capex),
        rack_rent=solver.value(built.rent),
        energy=solver.value(built.energy),
        bandwidth=solver.value(built.bandwidth),
        cloud=solver.value(built.cloud_cost),
        penalties=solver.value(built.penalties),
        network=solver.value(built.network),
        storage=solver.value(built.storage),
        residual=solver.value(built.residual),
        resale=solver.value(built.resale),
        **_financing_costs(built, solver),
    )
    solution = Solution(
        status=status,
        choices=choices,
        servers=servers,
        racks=racks,
        costs=costs,
        objective_value=objective,
        best_bound=bound,
        wall_s=wall,
        fabric=_fabric(built, solver),
        storage={
            key: int(solver.value(v)) for key, v in built.storage_nodes.items() if solver.value(v)
        },
        bought=_bought(built, solver, servers),
        moved=_moved(built, solver),
        leased=_leased(built, solver),
    )
    return dataclasses.replace(solution, binding=binding(built.instance, solution))


def _bought(
    built: Built, solver: cp_model.CpSolver, servers: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    """Servers bought per (sku, site): all in service, less the owned ones kept."""
    if built.inventory is None:
        return dict(servers)
    out = {key: int(solver.value(v)) for key, v in built.inventory.bought.items()}
    return {k: v for k, v in out.items() if v > 0}


def _financing_costs(built: Built, solver: cp_model.CpSolver) -> dict[str, int]:
    """Costs' financing fields (`financing.py`): none without financing."""
    fin = built.financing
    if fin is None:
        return {}
    return {
        "financing": int(solver.value(fin.extra)),
        "financed": int(solver.value(fin.financed)),
        "instalments": int(solver.value(fin.instalments)),
        "financing_steer": int(solver.value(fin.steer)),
    }


def _leased(built: Built, solver: cp_model.CpSolver) -> dict[tuple[str, str, str], int]:
    """Bought servers financed per (sku, site, offer)."""
    if built.financing is None:
        return {}
    out = {key: int(solver.value(v)) for key, v in built.financing.leased.items()}
    return {k: v for k, v in out.items() if v > 0}


def _moved(built: Built, solver: cp_model.CpSolver) -> dict[tuple[str, str, str], int]:
    """Owned servers moved per (sku, from site, to site)."""
    if built.inventory is None:
        return {}
    out = {key: int(solver.value(v)) for key, v in built.inventory.moved.items()}
    return {k: v for k, v in out.items() if v > 0}


def _fabric(built: Built, solver: cp_model.CpSolver) -> dict[tuple[str, str], FabricCount]:
    return fabric_counts(built.fabric, solver)


def fabric_counts(
    fabric: Mapping[tuple[str, str], FabricVars], solver: cp_model.CpSolver
) -> dict[tuple[str, str], FabricCount]:
    """Each (site, class)'s fabric as solved: switches, ports and links."""
    out = {}
    for key, fv in fabric.items():
        small = [s.id for s, v in zip(fv.fabric.small, fv.small, strict=True) if solver.value(v)]
        count = FabricCount(
            ports=int(solver.value(fv.ports)),
            single=int(solver.value(fv.single)),
            leaves=int(solver.value(fv.leaves)),
            spines=int(solver.value(fv.spines)),
            small=small[0] if small else None,
            direct_links=int(solver.value(fv.cables)) if fv.cables is not None else 0,
        )
        if count.ports or count.switches or count.direct_links:
            out[key] = count
    return out


def _choices(built: Built, solver: cp_model.CpSolver) -> tuple[Choice, ...]:
    picked: dict[str, Choice] = {}
    for o in built.owned:
        if solver.boolean_value(o.var):
            picked[o.option.workload] = Choice(o.option.workload, o.option.key, o.placement.site)
    for c in built.cloud:
        if solver.boolean_value(c.var):
            picked[c.option.workload] = Choice(c.option.workload, c.option.key, None)
    return tuple(picked[w] for w in built.instance.workloads if w in picked)


def _racks(
    built: Built, solver: cp_model.CpSolver, servers: dict[tuple[str, str], int]
) -> dict[tuple[str, RackFill], int]:
    """Racks per site as actual fills (SKU counts per rack), grouped.

    The model counts racks per slot pattern over shapes; here each shape's servers are
    dealt into that shape's slots rack by rack, in a fixed order, so the report says which
    SKUs share a rack. A slot pattern can leave slots empty, so a fill may hold less than
    its pattern; an unneeded rack shows as an empty fill (never in an optimal plan with a
    positive rent, since rent is charged per rack).
    """
    out: dict[tuple[str, RackFill], int] = {}
    for site_id, pack in built.packing.items():
        slot_vectors: list[tuple[int, ...]] = []
        for fill, var in zip(pack.patterns.fills, pack.pattern_racks, strict=True):
            slot_vectors += [fill] * int(solver.value(var))
        for rack in pack.bins:
            if solver.boolean_value(rack.open):
                slot_vectors.append(tuple(int(solver.value(c)) for c in rack.counts))
        if pack.relaxed is not None:
            # The solve checked that these servers pack into the racks rented here;
            # `pack` gives such a packing (any racks beyond it stay empty).
            rel = pack.relaxed
            counts = tuple(int(solver.value(d)) for d in rel.demand)
            fills = list(binpack.pack(rel.shapes, counts, rel.rack_w, rel.rack_units))
            slot_vectors += fills + [(0,) * len(counts)] * (
                int(solver.value(rel.racks)) - len(fills)
            )
        for rack_fill in deal(slot_vectors, pack.patterns.members, site_id, servers):
            key = (site_id, rack_fill)
            out[key] = out.get(key, 0) + 1
    return out


def deal(
    slot_vectors: Sequence[tuple[int, ...]],
    members: Sequence[tuple[str, ...]],
    site: str,
    servers: dict[tuple[str, str], int],
) -> list[RackFill]:
    """Deal each shape's servers (SKUs in id order) into the racks' slots of that shape."""
    left = {(k, site): servers.get((k, site), 0) for group in members for k in group}
    fills: list[RackFill] = []
    for slots in slot_vectors:
        rack: dict[str, int] = defaultdict(int)
        for h, free in enumerate(slots):
            for sku in members[h]:
                take = min(free, left[(sku, site)])
                if take:
                    rack[sku] += take
                    left[(sku, site)] -= take
                    free -= take
        fills.append(tuple(sorted(rack.items())))
    return fills


# --------------------------------------------------------------------------- binding


def binding(instance: Instance, solution: Solution) -> tuple[str, ...]:
    """Requirements and capacities that are tight in a plan.

    Money is integral, so "at the cap" means the plan spends under that heading and the
    slack cannot buy the smallest further step (one more server of the cheapest SKU for
    capex; one more rack-month, server's energy, site's bandwidth or cloud rental for the
    monthly cap, over the horizon; the smaller of the two for the total cap). A plan that
    spends nothing under a cap is not at it, whatever the cap keeps out.
    Racks bind when every available rack at a site is taken. Rack power (space) binds when
    some rack has room for another server of a SKU used at that site by space (power) and
    cooling but not by power (space), and the site's servers would fit in fewer racks were
    power (space) no limit: a site with one rack's worth of servers is bound by neither.
    Deadlines are the caller's to judge.
    """
    if solution.costs is None:
        return ()
    names: list[str] = []
    costs = solution.costs
    h = instance.horizon_months
    capex_step = min((s.capex for s in instance.skus.values() if s.capex > 0), default=1)
    opex = costs.capped_opex
    cap = instance.capex_max
    forced = cap is not None and costs.financed > 0 and costs.capex > cap  # financed to fit
    if cap is not None and costs.cash_capex > 0 and (cap - costs.cash_capex < capex_step or forced):
        names.append("capex")
    monthly = instance.monthly_max
    if monthly is not None and opex > 0 and h * monthly - opex < _monthly_step(instance):
        names.append("monthly")
    if instance.total_max is not None:
        spend = costs.capex + costs.rack_rent + costs.energy + costs.bandwidth + costs.cloud
        spend += costs.financing
        step = min(capex_step, _monthly_step(instance))
        if spend > 0 and instance.total_max - spend < step:
            names.append("total")
    racks_at: dict[str, int] = defaultdict(int)
    for (site, _), count in solution.racks.items():
        racks_at[site] += count
    for site_id in sorted(racks_at):
        if racks_at[site_id] >= instance.sites[site_id].racks_available:
            names.append(f"racks:{site_id}")
    used_skus = _skus_in_solution(solution)
    for site_id in sorted(racks_at):
        names += _rack_limits(instance, solution, site_id, used_skus.get(site_id, set()))
    return tuple(names)


def _monthly_step(instance: Instance) -> int:
    h = instance.horizon_months
    steps = [c.cost_total for c in instance.cloud]
    for site in instance.sites.values():
        steps += [h * site.rack_rent_month, h * site.bandwidth_month]
        steps += [h * e for e in site.energy_month.values()]
    return min((s for s in steps if s > 0), default=1)


def _skus_in_solution(solution: Solution) -> dict[str, set[str]]:
    at: dict[str, set[str]] = defaultdict(set)
    for sku, site in solution.servers:
        at[site].add(sku)
    return at


def _rack_limits(instance: Instance, solution: Solution, site_id: str, skus: set[str]) -> list[str]:
    site = instance.sites[site_id]
    candidates = [
        Shape(s.power_w, s.rack_units)
        for k in sorted(skus)
        if site.cooling in (s := instance.skus[k]).cooling
    ]
    power_bound = space_bound = False
    for (sid, fill), _count in solution.racks.items():
        if sid != site_id or not fill:
            continue
        power = sum(instance.skus[k].power_w * c for k, c in fill)
        units = sum(instance.skus[k].rack_units * c for k, c in fill)
        for shape in candidates:
            fits_u = units + shape.rack_units <= site.rack_units
            fits_w = power + shape.power_w <= site.rack_w
            power_bound |= fits_u and not fits_w
            space_bound |= fits_w and not fits_u
    out = []
    held = [
        instance.skus[sku]
        for (sku, s), n in sorted(solution.servers.items())
        if s == site_id
        for _ in range(n)
    ]
    racks = sum(n for (sid, fill), n in solution.racks.items() if sid == site_id and fill)
    if power_bound and _first_fit([s.rack_units for s in held], site.rack_units) < racks:
        out.append(f"rack_power:{site_id}")
    if space_bound and _first_fit([s.power_w for s in held], site.rack_w) < racks:
        out.append(f"rack_space:{site_id}")
    return out


def _first_fit(sizes: list[int], capacity: int) -> int:
    """Racks first-fit decreasing needs for these sizes (of one kind: units or watts): an
    upper bound on the fewest, so fewer than the plan's racks proves the other limit binds."""
    free: list[int] = []
    for size in sorted(sizes, reverse=True):
        for i, room in enumerate(free):
            if size <= room:
                free[i] -= size
                break
        else:
            free.append(capacity - size)
    return len(free)
