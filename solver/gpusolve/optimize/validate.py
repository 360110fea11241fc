"""An independent check of a plan against its instance, without the model.

Everything here is recomputed from the choices, server counts and rack fills in the
`Solution`: if the model and this checker disagree, one of them is wrong. Used by the
tests on every returned plan and available to the CLI as a guard before rendering.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from gpusolve.optimize import finance, financing
from gpusolve.optimize.fabric import (
    fabric_cost,
    fabric_room,
    rack_room_units,
    rack_room_w,
    small_switch,
    storage_kinds,
)
from gpusolve.optimize.inventory import (
    inventory_problems,
    move_cost,
    purchases,
    resale_value,
)
from gpusolve.optimize.inventory import rent_credit as inventory_rent_credit
from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    CloudOption,
    Costs,
    Instance,
    OwnedOption,
    Placement,
    Solution,
)


def check(instance: Instance, solution: Solution) -> list[str]:
    """Violations of `solution` against `instance` (normal mode: every requirement hard).

    A solution without a plan (infeasible, unknown) has nothing to check.
    """
    if solution.status not in ("optimal", "feasible"):
        return []
    problems: list[str] = []
    placed = _resolve_choices(instance, solution, problems)
    _check_servers(instance, solution, placed, problems)
    _check_racks(instance, solution, problems)
    _check_fabric(instance, solution, placed, problems)
    _check_storage(instance, solution, placed, problems)
    problems += inventory_problems(instance, solution.servers, solution.bought, solution.moved)
    costs = recompute_costs(instance, solution, placed)
    costs = with_financing(instance, solution, costs, problems)
    _check_budgets(instance, costs, problems)
    if solution.costs != costs:
        problems.append(f"reported costs {solution.costs} != recomputed {costs}")
    _check_objective(instance, solution, costs, problems)
    return problems


def _check_objective(
    instance: Instance, solution: Solution, costs: Costs, problems: list[str]
) -> None:
    """The solver's objective is the cost recomputed from the decisions: a guard against
    a silent scaling error between the figures and the model."""
    value = solution.objective_value
    if instance.objective == "min-tco" and value is not None and value != costs.objective_tco:
        problems.append(
            f"objective {value} != recomputed cost plus penalties {costs.objective_tco}"
        )


def assert_consistent(instance: Instance, solution: Solution) -> None:
    """Raise (an internal error, exit 70) when a plan disagrees with its own figures."""
    problems = check(instance, solution)
    if problems:
        raise RuntimeError("plan failed its independent check: " + "; ".join(problems[:5]))


Placed = list[tuple[OwnedOption, Placement] | CloudOption]


def _resolve_choices(instance: Instance, solution: Solution, problems: list[str]) -> Placed:
    """Every workload exactly one existing, allowed option at one of its placements."""
    owned = {o.key: o for o in instance.owned}
    cloud = {c.key: c for c in instance.cloud}
    placed: Placed = []
    seen: dict[str, int] = defaultdict(int)
    for choice in solution.choices:
        seen[choice.workload] += 1
        if choice.option in owned:
            option = owned[choice.option]
            placement = next((p for p in option.placements if p.site == choice.site), None)
            if placement is None:
                problems.append(f"{choice.option}: no placement at site {choice.site}")
                continue
            if option.workload != choice.workload:
                problems.append(f"{choice.option} does not belong to {choice.workload}")
            if option.violates | placement.violates:
                problems.append(f"{choice.option}@{choice.site} violates a requirement")
            placed.append((option, placement))
        elif choice.option in cloud:
            offer = cloud[choice.option]
            if choice.site is not None or offer.workload != choice.workload:
                problems.append(f"{choice.option}: bad cloud choice {choice}")
            if offer.violates:
                problems.append(f"{choice.option} violates a requirement")
            placed.append(offer)
        else:
            problems.append(f"unknown option {choice.option}")
    for workload in instance.workloads:
        if seen.get(workload, 0) != 1:
            problems.append(f"workload {workload} has {seen.get(workload, 0)} choices")
    for workload in seen:
        if workload not in instance.workloads:
            problems.append(f"unknown workload {workload}")
    return placed


def slot_demand(placed: Placed) -> dict[tuple[str, str, str], int]:
    """Servers needed per (sku, site, slot): day and night work share servers (H29)."""
    need: dict[tuple[str, str, str], int] = defaultdict(int)
    for item in placed:
        if isinstance(item, tuple):
            option, placement = item
            for slot in SLOTS_COVERED[option.slot]:
                need[(option.sku, placement.site, slot)] += option.servers
    return dict(need)


def _check_servers(
    instance: Instance, solution: Solution, placed: Placed, problems: list[str]
) -> None:
    spare = int(instance.spares)  # N+1: one more than any slot needs where used
    for (sku, site, slot), need in sorted(slot_demand(placed).items()):
        need += spare
        have = solution.servers.get((sku, site), 0)
        if have < need:
            problems.append(f"{sku}@{site} {slot}: {have} servers < {need} needed")
    for (sku, site), count in solution.servers.items():
        if count < 0 or sku not in instance.skus or site not in instance.sites:
            problems.append(f"bad server entry {(sku, site)}: {count}")


def _check_racks(instance: Instance, solution: Solution, problems: list[str]) -> None:
    """Racks hold the servers within kW, U and cooling, and no more racks than offered."""
    held: dict[tuple[str, str], int] = defaultdict(int)
    racks_at: dict[str, int] = defaultdict(int)
    for (site_id, fill), count in solution.racks.items():
        site = instance.sites.get(site_id)
        if site is None or count < 0:
            problems.append(f"bad rack entry {(site_id, fill)}: {count}")
            continue
        racks_at[site_id] += count
        power = units = 0
        for sku_id, n in fill:
            sku = instance.skus[sku_id]
            if site.cooling not in sku.cooling:
                problems.append(f"{sku_id} cannot be cooled by {site.cooling} at {site_id}")
            power += n * sku.power_w
            units += n * sku.rack_units
            held[(sku_id, site_id)] += n * count
        if power > site.rack_w or units > site.rack_units:
            problems.append(f"rack fill {fill} at {site_id}: {power} W, {units} U too much")
    for key, count in solution.servers.items():
        if held.get(key, 0) < count:
            problems.append(f"{key}: {count} servers but racks hold {held.get(key, 0)}")
    for site_id, count in racks_at.items():
        if count > instance.sites[site_id].racks_available:
            available = instance.sites[site_id].racks_available
            problems.append(f"{site_id}: {count} racks > {available} available")


def recompute_costs(instance: Instance, solution: Solution, placed: Placed) -> Costs:
    h = instance.horizon_months
    capex = energy = residual = 0
    for (sku, _site), count in purchases(instance, solution.servers, solution.bought).items():
        capex += instance.skus[sku].capex * count
        residual += instance.skus[sku].residual * count
    for (sku, site), count in solution.servers.items():
        energy += h * instance.sites[site].energy_month.get(sku, 0) * count
    racks_at: dict[str, int] = defaultdict(int)
    for (site, _), count in solution.racks.items():
        racks_at[site] += count
    rent = sum(
        finance.rent_months(h, instance.sites[site].rent_months)
        * instance.sites[site].rack_rent_month
        * count
        for site, count in racks_at.items()
    )
    rent += inventory_rent_credit(instance, solution.racks)
    rent += move_cost(instance, solution.moved)
    energy += sum(item[1].busy_energy for item in placed if isinstance(item, tuple))
    sites_used = {item[1].site for item in placed if isinstance(item, tuple)}
    rent += sum(instance.sites[s].setup_fee for s in sites_used)
    bandwidth = sum(h * instance.sites[s].bandwidth_month for s in sites_used)
    bandwidth += sum(
        extra * instance.sites[s].extra_mbps_cost
        for s, extra in extra_mbps(instance, placed).items()
    )
    cloud = sum(item.cost_total for item in placed if isinstance(item, CloudOption))
    cloud += sum(item[0].rent + item[1].bridge for item in placed if isinstance(item, tuple))
    penalties = sum(
        item[0].penalty + item[0].burst_penalty + item[1].penalty
        if isinstance(item, tuple)
        else item.penalty
        for item in placed
    )
    network = recompute_network(instance, solution)
    storage = recompute_storage(instance, solution)
    capex += network + storage
    resale = resale_value(instance, solution.servers, solution.bought, solution.moved)
    return Costs(
        capex, rent, energy, bandwidth, cloud, penalties, residual, network, storage, resale
    )


def recompute_storage(instance: Instance, solution: Solution) -> int:
    return sum(
        storage_kinds(instance.sites[site])[kind].price * nodes
        for (site, kind), nodes in solution.storage.items()
    )


def _check_storage(
    instance: Instance, solution: Solution, placed: Placed, problems: list[str]
) -> None:
    """Each site's storage nodes hold what the workloads placed there keep."""
    need: dict[str, int] = defaultdict(int)
    for item in placed:
        if isinstance(item, tuple) and item[0].storage_gb > 0:
            site = instance.sites[item[1].site]
            if site.storage:
                need[site.id] += item[0].storage_gb
    for site_id, gb in sorted(need.items()):
        kinds = storage_kinds(instance.sites[site_id])
        have = sum(
            kinds[kind].capacity_gb * n for (s, kind), n in solution.storage.items() if s == site_id
        )
        if have < gb:
            problems.append(f"{site_id}: storage for {gb} GB, nodes hold {have} GB")


def recompute_network(instance: Instance, solution: Solution) -> int:
    """Fabric switches and links, NICs bought apart, and each rack's own parts (ToR and
    management switches, uplinks, PDUs)."""
    total = sum(fabric_cost(instance.fabrics[cls], c) for (_, cls), c in solution.fabric.items())
    total += sum(instance.skus[k].nic_capex * n for (k, _), n in solution.servers.items())
    total += sum(  # per rack of servers (racks of switches alone need none)
        instance.sites[site].rack_network_capex * count
        for (site, fill), count in solution.racks.items()
        if fill
    )
    return total


def _check_fabric(
    instance: Instance, solution: Solution, placed: Placed, problems: list[str]
) -> None:
    """Every NIC of a job across servers has a switch port, and the tiers connect."""
    need: dict[tuple[str, str, str], int] = defaultdict(int)
    servers: dict[tuple[str, str, str], int] = defaultdict(int)
    for item in placed:
        if not isinstance(item, tuple) or not item[0].spans:
            continue
        option, placement = item
        sku = instance.skus[option.sku]
        if sku.fabric is None or sku.fabric not in instance.fabrics:
            continue
        for slot in SLOTS_COVERED[option.slot]:
            need[(placement.site, sku.fabric, slot)] += option.servers * sku.nics
            servers[(placement.site, sku.fabric, slot)] += option.servers
    for (site, cls, slot), ports in sorted(need.items()):
        count = solution.fabric.get((site, cls))
        direct = count is not None and count.direct_links > 0
        if direct and servers[(site, cls, slot)] > 2:
            problems.append(f"fabric {cls}@{site} {slot}: direct links for more than 2 servers")
        if count is None or (count.ports < ports and not direct):
            problems.append(f"fabric {cls}@{site} {slot}: {ports} ports needed")
    for (site, cls), c in solution.fabric.items():
        f = instance.fabrics[cls]
        two_tier = c.leaves > 0 or c.spines > 0
        small = small_switch(f, c)
        modes = c.single + two_tier + (small is not None) + (c.direct_links > 0)
        if modes > 1 or (two_tier and c.leaves < 2):
            problems.append(f"fabric {cls}@{site}: not one switch, a two-tier tree nor direct")
        held = small.radix if small is not None else 0
        if c.ports > f.radix * c.single + held + f.down_ports * c.leaves:
            problems.append(f"fabric {cls}@{site}: {c.ports} ports on too few switches")
        if f.radix * c.spines < f.up_ports * c.leaves:
            problems.append(f"fabric {cls}@{site}: too few spines for the leaves' uplinks")
    _check_switch_room(instance, solution, problems)


def _check_switch_room(instance: Instance, solution: Solution, problems: list[str]) -> None:
    """Fabric switches fit in the servers' racks' reserve (after each rack's own parts) plus
    the racks rented for switches alone (the empty fill)."""
    for site_id in sorted({s for s, _ in solution.fabric} | {s for s, _ in solution.storage}):
        site = instance.sites[site_id]
        server_racks = sum(n for (s, fill), n in solution.racks.items() if s == site_id and fill)
        alone = solution.racks.get((site_id, ()), 0)
        units = power = 0
        for (s, cls), c in solution.fabric.items():
            if s == site_id:
                u, w = fabric_room(instance.fabrics[cls], c)
                units, power = units + u, power + w
        kinds = storage_kinds(site)
        for (s, kind), n in solution.storage.items():
            if s == site_id:
                units += kinds[kind].rack_units * n
                power += kinds[kind].power_w * n
        for (sku_id, s), n in solution.servers.items():
            if s == site_id:
                units += instance.skus[sku_id].rack_units * n
                power += instance.skus[sku_id].power_w * n
        if units > rack_room_units(site) * server_racks + site.rack_units * alone:
            problems.append(f"{site_id}: servers, switches and storage need {units} U")
        if power > rack_room_w(site) * server_racks + site.rack_w * alone:
            problems.append(f"{site_id}: servers, switches and storage need {power} W")


def extra_mbps(instance: Instance, placed: Placed) -> dict[str, int]:
    """Per used site with a bandwidth demand, the Mbps bought beyond what is included."""
    need: dict[tuple[str, str], int] = defaultdict(int)  # (site, slot) -> Mbps
    for item in placed:
        if isinstance(item, tuple) and item[0].bandwidth_mbps > 0:
            for slot in SLOTS_COVERED[item[0].slot]:
                need[(item[1].site, slot)] += item[0].bandwidth_mbps
    out: dict[str, int] = {}
    for site_id in sorted({s for s, _ in need}):
        slots = {t: n for (s, t), n in need.items() if s == site_id}
        included = instance.sites[site_id].bandwidth_mbps
        out[site_id] = finance.site_bandwidth_mbps(included, slots) - included
    return out


def with_financing(
    instance: Instance, solution: Solution, costs: Costs, problems: list[str]
) -> Costs:
    """The costs with the financed servers' terms recomputed from their counts."""
    if not instance.financing and not solution.leased:
        return costs
    bought = purchases(instance, solution.servers, solution.bought)
    f = financing.recompute(instance, solution.leased, bought, problems)
    return dataclasses.replace(
        costs,
        financing=f.extra,
        financed=f.financed,
        instalments=f.instalments,
        financing_steer=f.steer,
    )


def _check_budgets(instance: Instance, costs: Costs, problems: list[str]) -> None:
    if instance.capex_max is not None and costs.cash_capex > instance.capex_max:
        problems.append(f"capex paid in cash {costs.cash_capex} > cap {instance.capex_max}")
    if instance.monthly_max is not None:
        spend = costs.capped_opex
        cap = instance.horizon_months * instance.monthly_max
        if spend > cap:
            problems.append(f"spend over the horizon {spend} > {cap} (monthly cap x horizon)")
    if instance.total_max is not None:
        spend = costs.capex + costs.rack_rent + costs.energy + costs.bandwidth + costs.cloud
        spend += costs.financing
        if spend > instance.total_max:
            problems.append(f"capex + spend {spend} > total cap {instance.total_max}")
