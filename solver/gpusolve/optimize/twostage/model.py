"""The two-stage model over scenarios: buy once, rent and lay out per scenario.

The search over it is `solve.py`. Each scenario is its own `Instance` (its prices,
its options: the candidates stage run on the scenario's requirements and catalogue). One
CP-SAT model holds them all:

* first stage, shared: servers per (SKU, site), the racks that hold them and the sites
  in use (bandwidth), built with `model.py`'s own pieces (`add_packing`), so a two-stage
  plan packs racks exactly as a single plan does;
* second stage, per scenario: one choice per workload among that scenario's options
  (`model.choice_vars`, `model.exactly_one`); a scenario's owned choices, slot by slot,
  use no more servers of a (SKU, site) than the first stage bought. Day and night share
  servers as in the single model; different scenarios never run at the same time, so
  each scenario is bounded by the servers alone (a max over scenarios, not a sum).

A SKU missing from a scenario's `skus` cannot be bought in it (a card that is not
available), and since the purchase is one decision for every scenario, the first stage
buys none of it. Every scenario's own prices (capex, energy, rent, bandwidth, cloud) price
the shared purchase in that scenario. Objective: the expected TCO plus penalties
(probabilities as integer weights, `PROBABILITY_SCALE`) or the worst scenario's, then,
among worst-case optima, the expected. With a fixed first stage (`fixed`) the model is
the second stage alone: how a given purchase fares in a scenario, its rentals re-chosen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.builder import (
    Builder,
    BuildOptions,
    CloudVar,
    Expr,
    OwnedVar,
    Var,
    option_sum,
    wsum,
    wsum_expr,
)
from gpusolve.optimize.checks import instance_errors
from gpusolve.optimize.costs import add_budgets, money_terms, throughput_scores
from gpusolve.optimize.fabric import add_fabric, with_infrastructure
from gpusolve.optimize.guard import check_scale
from gpusolve.optimize.inventory import InventoryVars
from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
)
from gpusolve.optimize.model import (
    SLOTS,
    Built,
    choice_vars,
    exactly_one,
    inventory_terms,
    max_demand,
    rank_expr,
)
from gpusolve.optimize.packing import SitePacking, add_packing
from gpusolve.optimize.prune import usable_cloud, usable_owned

# Probabilities become integer weights out of this many (the objective stays integral).
PROBABILITY_SCALE = 10_000
# Per-rack variables where a site has too many fills: exact in one solve (the lazy
# relaxation's cuts are the single-plan solve loop's, which this model does not run).
TWO_STAGE_BUILD = BuildOptions(fallback="bins")


@dataclass(frozen=True)
class Scenario:
    name: str
    probability: float
    instance: Instance


@dataclass(frozen=True)
class FirstStage:
    """What is bought and where: servers per (SKU, site)."""

    servers: dict[tuple[str, str], int]


@dataclass(frozen=True)
class TwoStage:
    """A built two-stage model: one `Built` view per scenario over the shared model."""

    model: cp_model.CpModel
    scenarios: tuple[Scenario, ...]
    built: tuple[Built, ...]
    servers: dict[tuple[str, str], Var]
    used: dict[str, Var]


def probability_weights(
    probabilities: Sequence[float], scale: int = PROBABILITY_SCALE
) -> list[int]:
    """Integer weights summing to `scale` (largest remainder), in order."""
    total = sum(probabilities) or 1.0
    raw = [p / total * scale for p in probabilities]
    weights = [int(r) for r in raw]
    rest = scale - sum(weights)
    by_remainder = sorted(range(len(raw)), key=lambda i: (weights[i] - raw[i], i))
    for i in by_remainder[:rest]:
        weights[i] += 1
    return weights


# --------------------------------------------------------------------------- build


def scenario_errors(scenarios: Sequence[Scenario]) -> list[str]:
    """Contract violations: scenarios must share workloads, horizon and physical items."""
    errors: list[str] = []
    if not scenarios:
        return ["no scenarios"]
    first = scenarios[0].instance
    for s in scenarios:
        errors += [f"scenario {s.name}: {e}" for e in instance_errors(s.instance)]
        inst = s.instance
        if inst.workloads != first.workloads or inst.horizon_months != first.horizon_months:
            errors.append(
                f"scenario {s.name}: workloads or horizon differ from {scenarios[0].name}"
            )
    sites = _union_sites(scenarios)
    for s in scenarios:
        missing = sorted(set(sites) - set(s.instance.sites))
        if missing:
            errors.append(f"scenario {s.name}: no prices for sites {', '.join(missing)}")
        for sku in s.instance.skus.values():
            other = _physical_skus(scenarios)[sku.id]
            if (sku.power_w, sku.rack_units, sku.cooling) != other:
                errors.append(f"scenario {s.name}: sku {sku.id} differs physically")
    return errors


def _physical_skus(scenarios: Sequence[Scenario]) -> dict[str, tuple[int, int, frozenset[str]]]:
    out: dict[str, tuple[int, int, frozenset[str]]] = {}
    for s in scenarios:
        for sku in s.instance.skus.values():
            out.setdefault(sku.id, (sku.power_w, sku.rack_units, sku.cooling))
    return out


def _union_sites(scenarios: Sequence[Scenario]) -> set[str]:
    return {site for s in scenarios for site in s.instance.sites}


def _union_instance(scenarios: Sequence[Scenario]) -> Instance:
    """The physical frame the shared packing is built on: every SKU and site."""
    skus: dict[str, Sku] = {}
    sites: dict[str, Site] = {}
    for s in scenarios:
        for k, sku in s.instance.skus.items():
            skus.setdefault(k, sku)
        for k, site in s.instance.sites.items():
            sites.setdefault(k, site)
    first = scenarios[0].instance
    return replace(first, skus=skus, sites=sites, owned=(), cloud=())


@dataclass
class _Part:
    """One scenario's second-stage variables while the shared ones are built."""

    b: Builder
    owned: list[OwnedVar]
    cloud: list[CloudVar]
    unplaceable: tuple[str, ...]


def build_two_stage(
    scenarios: Sequence[Scenario],
    fixed: FirstStage | None = None,
    options: BuildOptions = TWO_STAGE_BUILD,
) -> TwoStage:
    """Build the model. Raises ValueError on malformed scenarios (a bug upstream)."""
    errors = scenario_errors(scenarios)
    if errors:
        raise ValueError("; ".join(errors))
    for s in scenarios:
        check_scale(s.instance)
    union = _union_instance(scenarios)
    b = Builder(union, options)
    parts: list[_Part] = []
    for s in scenarios:
        part_b = Builder(s.instance, options, b.model)  # one model holds every scenario
        owned_opts = usable_owned(s.instance, "normal", frozenset(), options.prune_dominated)
        cloud_opts = usable_cloud(s.instance, "normal", frozenset(), options.prune_dominated)
        owned, cloud = choice_vars(part_b, owned_opts, cloud_opts)
        parts.append(_Part(part_b, owned, cloud, exactly_one(part_b, owned, cloud)))
    servers, servers_ub = _shared_servers(b, parts, scenarios, fixed)
    idle = _idle_servers(b, parts, fixed)
    used = _shared_used(b, parts, servers, fixed)
    owned_all = [o for part in parts for o in part.owned] + idle
    choices = sum(len(p.owned) + len(p.cloud) for p in parts)
    packing = add_packing(b, owned_all, servers, servers_ub, used, choices)
    # Owned servers and contracted racks are first-stage, decided once (`inventory.py`).
    inv = inventory_terms(b, servers, servers_ub, packing)
    built = tuple(
        _scenario_view(part, s.instance, servers, packing, used, inv)
        for part, s in zip(parts, scenarios, strict=True)
    )
    return TwoStage(b.model, tuple(scenarios), built, servers, used)


def _shared_servers(
    b: Builder,
    parts: Sequence[_Part],
    scenarios: Sequence[Scenario],
    fixed: FirstStage | None,
) -> tuple[dict[tuple[str, str], Var], dict[tuple[str, str], int]]:
    """Servers per (SKU, site) cover every scenario's demand in every slot; the bound is
    the largest demand any one scenario can put there (`model.server_vars`, per part)."""
    groups: dict[tuple[str, str], list[list[OwnedVar]]] = defaultdict(lambda: [[] for _ in parts])
    for i, part in enumerate(parts):
        for o in part.owned:
            groups[(o.option.sku, o.placement.site)][i].append(o)
    buyable = set.intersection(*(set(s.instance.skus) for s in scenarios))
    keys = set(groups) | (set(fixed.servers) if fixed else set())
    servers: dict[tuple[str, str], Var] = {}
    bounds: dict[tuple[str, str], int] = {}
    demand: dict[tuple[str, str], list[Expr]] = defaultdict(list)
    users: dict[tuple[str, str], list[Var]] = defaultdict(list)
    for key in sorted(keys):
        per_part = groups.get(key, [[] for _ in parts])
        ub = 0
        for terms in per_part:
            for t in SLOTS:
                ub = max(ub, max_demand([o for o in terms if t in SLOTS_COVERED[o.option.slot]]))
        if fixed is not None:
            ub = max(ub, fixed.servers.get(key, 0))
        spare = int(any(s.instance.spares for s in scenarios))  # N+1 (`finance.py`)
        ub += spare
        if key[0] not in buyable:
            ub = 0  # not available in some scenario: bought in none
        n = b.model.new_int_var(0, ub, f"n[{key[0]}@{key[1]}]")
        servers[key] = n
        bounds[key] = ub
        if fixed is not None:
            b.model.add(n == fixed.servers.get(key, 0))
        for terms in per_part:
            seen: set[tuple[int, ...]] = set()
            for t in SLOTS:
                slot_terms = [o for o in terms if t in SLOTS_COVERED[o.option.slot]]
                signature = tuple(o.var.index for o in slot_terms)
                if slot_terms and signature not in seen:
                    seen.add(signature)
                    need = wsum([(o.option.servers, o.var) for o in slot_terms])
                    b.model.add(need <= n)
                    demand[key].append(need)
            users[key] += [o.var for o in terms]
    if any(s.instance.spares for s in scenarios):
        finance.spare_flags(b.model, servers, users, demand)
    return servers, bounds


def _idle_servers(b: Builder, parts: Sequence[_Part], fixed: FirstStage | None) -> list[OwnedVar]:
    """A fixed purchase may hold servers no option of these scenarios can place: they
    still take rack space, so the packing is told about them (a placeholder choice that
    is never part of any scenario's rows)."""
    if fixed is None:
        return []
    placeable = {(o.option.sku, o.placement.site) for p in parts for o in p.owned}
    out: list[OwnedVar] = []
    for sku, site in sorted(fixed.servers):
        if (sku, site) in placeable or not fixed.servers[(sku, site)]:
            continue
        option = OwnedOption(f"idle:{sku}@{site}", "(idle)", sku, 1, "always", (Placement(site),))
        var = b.model.new_bool_var(f"idle[{sku}@{site}]")
        out.append(OwnedVar(option, option.placements[0], var, 0))
    return out


def _shared_used(
    b: Builder,
    parts: Sequence[_Part],
    servers: dict[tuple[str, str], Var],
    fixed: FirstStage | None,
) -> dict[str, Var]:
    """used[site]: bandwidth is paid where anything is placed in any scenario. Each
    scenario's choices at a site imply it (`model.site_used`, per part); with a fixed
    purchase it is simply "servers are there"."""
    sites = sorted({site for _, site in servers})
    used = {site: b.model.new_bool_var(f"used[{site}]") for site in sites}
    if fixed is not None:
        for site in sites:
            there = any(n for (_, s), n in fixed.servers.items() if s == site)
            b.model.add(used[site] == int(there))
    else:
        anywhere: dict[str, list[Var]] = defaultdict(list)
        for part in parts:
            for o in part.owned:
                anywhere[o.placement.site].append(o.var)
        for site in sites:
            b.model.add_bool_or([~used[site], *anywhere[site]])
    for part in parts:
        by_pair: dict[tuple[str, str], list[Var]] = defaultdict(list)
        for o in part.owned:
            by_pair[(o.placement.site, o.option.workload)].append(o.var)
        for (site, _), vars_ in sorted(by_pair.items()):
            b.model.add(sum(vars_) <= used[site])
    return used


def _scenario_view(
    part: _Part,
    instance: Instance,
    servers: dict[tuple[str, str], Var],
    packing: dict[str, SitePacking],
    used: dict[str, Var],
    inv: InventoryVars | None = None,
) -> Built:
    """One scenario's costs over the shared purchase, as a `Built` so that the single
    model's readout (`readout.read_solution`) reads it unchanged."""
    # The cluster network and storage (`fabric.py`) this scenario's jobs need.
    net = add_fabric(
        part.b.model, instance, part.owned, servers, {s: p.total for s, p in packing.items()}
    )
    owned, cloud = part.owned, part.cloud
    # Bandwidth and the set-up fee are this scenario's where it places something, as
    # in a single plan (`model.site_used`, which `validate.py` recomputes): a site
    # holding only servers the scenario leaves idle pays its racks, not its line.
    here = _scenario_used(part, used)
    bought = inv.bought if inv is not None else None
    money = money_terms(part.b, instance, servers, packing, here, owned, cloud, bought)
    capex, rent, energy, bandwidth, cloud_cost, residual = money
    if inv is not None:
        rent += inv.rent_credit
    capex, rent = with_infrastructure(instance, net, capex, rent)
    penalties = wsum(
        [(o.option.penalty + o.option.burst_penalty + o.placement.penalty, o.var) for o in owned]
        + [(c.option.penalty, c.var) for c in cloud]
    )
    add_budgets(part.b, capex, rent + energy + bandwidth + cloud_cost)
    scores = throughput_scores(instance)
    return Built(
        model=part.b.model,
        instance=instance,
        mode="normal",
        relax=frozenset(),
        owned=owned,
        cloud=cloud,
        servers=servers,
        packing=packing,
        used=used,
        literals={},
        requirements={},
        unplaceable=part.unplaceable,
        capex=capex,
        rent=rent,
        energy=energy,
        bandwidth=bandwidth,
        cloud_cost=cloud_cost,
        penalties=penalties,
        throughput=option_sum(owned, cloud, lambda option: scores[option.key]),
        headroom=option_sum(owned, cloud, lambda option: option.headroom_permille),
        racks_total=wsum_expr([(1, p.total) for p in packing.values()]),
        servers_total=wsum([(1, v) for v in servers.values()]),
        rank=rank_expr(owned, cloud, packing),
        network=net.network,
        fabric=net.fabric,
        switch_racks=net.racks,
        storage=net.storage,
        storage_nodes=net.storage_nodes,
        residual=residual,
        inventory=inv,
    )


def _scenario_used(part: _Part, used: dict[str, Var]) -> dict[str, Var]:
    """One scenario's used[site]: exactly "this scenario places something there", and
    within the shared used[site] that the racks hang on."""
    by_site: dict[str, list[Var]] = defaultdict(list)
    by_pair: dict[tuple[str, str], list[Var]] = defaultdict(list)
    for o in part.owned:
        by_site[o.placement.site].append(o.var)
        by_pair[(o.placement.site, o.option.workload)].append(o.var)
    out: dict[str, Var] = {}
    for site in sorted(used):
        if not by_site[site]:
            continue  # nothing of this scenario can go there: no line to pay
        u = part.b.model.new_bool_var(f"used[{site}]")
        part.b.model.add_bool_or([~u, *by_site[site]])
        part.b.model.add_implication(u, used[site])
        out[site] = u
    for (site, _), vars_ in sorted(by_pair.items()):
        part.b.model.add(sum(vars_) <= out[site])
    return out
