"""`plan --sensitivity`: how far each price or assumption may move before the plan changes.

For every parameter that enters the chosen plan's cost (each bought server's price, each
used colocation offer's rack rent, power price and bandwidth price, each rented cloud
offer's price, its hourly, monthly and reserved tiers together, each switch, link, NIC and
storage node the plan buys) and the efficiency of each card the candidates considered, the
plan is re-solved with that one parameter multiplied by a factor, hinted with the chosen
plan:
geometric steps away from 1 (x2 per step, out to `PRICE_LIMITS`), then bisection between
the last factor that keeps the plan and the first that changes it, to `REL_TOL`.

"Same plan" compares what is bought, placed and rented (`plan_key`): per workload the
server SKU and count with the site, or the cloud offer and instance count, plus servers
per (SKU, site) and racks per site; never the TCO, which moves with the price.

Prices scale the optimiser's integral coefficients directly (rounded half-even, as the
candidates stage rounds them), so no candidate is re-generated. A network or storage item's
price is read by the candidates stage's own pricing (`candidates/network.py`: the cheapest
switch per port, the rack's ToR and uplinks, the NICs a server lacks, VAT), so its
parameter prices a catalogue copy with the one item scaled through those functions
(`network_instance`); nothing else is generated again. Efficiency is a property
of the physics: the card's catalogue entry is replaced by one whose compute peaks, measured
matmul rate and memory bandwidth are multiplied by the factor (every kernel runs that much
faster or slower; links are unchanged), and that card's options are generated again from
the catalogue copy (`card_instance`; every other option is untouched). The FP32 peak is
left alone: rule h13 prefers cards by their FP32 datasheet figure, which is not an
efficiency. A card the plan does not use is searched upwards only: slower, it cannot win.

The parameters run over a pool of forked processes, one parameter a task; the command's
main thread only waits, so Ctrl-C and SIGTERM end the analysis at once (`stoppable`).

The optimal set of one parameter's factor is an interval when the parameter is a cost
coefficient (each plan's objective is linear in it), which is what makes bisection sound;
for efficiency it is what is searched for, within `EFFICIENCY_LIMITS`.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gpusolve.models.plan import Plan, Sensitivity, SensitivityKind, SensitivityRange
from gpusolve.optimize.ir import (
    CloudOption,
    Instance,
    OwnedOption,
    Site,
    Sku,
    Solution,
    SolveConfig,
)

if TYPE_CHECKING:
    from gpusolve.models.catalog import Card, Catalog
    from gpusolve.models.policy import WorkloadPolicy
    from gpusolve.models.requirements import Requirements

# Prices are searched from a tenth to ten times their catalogue value: beyond that a quote
# is a different product, and the user multiplied cloud prices by 5 by hand.
PRICE_LIMITS = (0.1, 10.0)
# Efficiency: H12's healthy MFU band is 40-60 %, so a model off by half either way is
# already outside it; a GEMM fraction cannot pass the peak, so 1.5x is near the ceiling
# for the best-modelled families (Hopper 0.80 x 0.8 = 64 % of peak).
EFFICIENCY_LIMITS = (0.5, 1.5)
STEP = 2.0  # geometric step away from 1 before the bisection
REL_TOL = 0.01  # the switch point to within 1 % of the factor
# Each probe is a small re-solve of a plan CP-SAT already knows (the hint); a probe that
# takes longer than this keeps its best plan.
PROBE_TIME_S = 10.0

PlanKey = tuple[tuple[Any, ...], ...]
NO_PLAN: PlanKey = (("no plan",),)
NOT_FOUND: PlanKey = (("no plan found in time",),)


@dataclass(frozen=True)
class Parameter:
    """One price or assumption, as the user reads it."""

    kind: SensitivityKind
    subject: str  # catalogue id (server, colo offer, cloud offer) or card
    words: str  # e.g. "price of hgx-h100-8gpu"
    unit: str
    current: float  # the catalogue value (1.0 for an efficiency multiplier)
    # A card the plan does not use: only its upward end is searched. Slower, its options
    # only get dearer and the plan's own are untouched, so the plan stays optimal.
    rival: bool = False

    @property
    def limits(self) -> tuple[float, float]:
        return EFFICIENCY_LIMITS if self.kind == "efficiency" else PRICE_LIMITS


@dataclass(frozen=True)
class Probe:
    """What one re-solve at a factor says."""

    factor: float
    key: PlanKey
    description: str  # the plan, in the words of its changed deployments
    tco: int | None


@dataclass(frozen=True)
class Edge:
    """One end of the range: the last factor that keeps the plan and the first probe that
    does not (None when the plan holds out to the limit)."""

    inside: float
    outside: Probe | None


@dataclass(frozen=True)
class Outcome:
    parameter: Parameter
    low: Edge
    high: Edge
    solves: int


# --------------------------------------------------------------------------- plans


def plan_key(solution: Solution, instance: Instance) -> PlanKey:
    """What a plan buys, places and rents: per workload its SKU and server count at its site
    or its cloud offer and instance count, servers per (SKU, site), racks per site."""
    if not solution.choices:
        return NO_PLAN if solution.status == "infeasible" else NOT_FOUND
    owned = {o.key: o for o in instance.owned}
    cloud = {o.key: o for o in instance.cloud}
    choices: list[tuple[Any, ...]] = []
    for c in solution.choices:
        if c.option in owned:
            o = owned[c.option]
            choices.append((c.workload, "own", o.sku, o.servers, c.site or ""))
        else:
            r = cloud[c.option]
            choices.append((c.workload, "rent", r.offer, r.instances, ""))
    servers = tuple(sorted((sku, site, n) for (sku, site), n in solution.servers.items() if n))
    racks: dict[str, int] = {}
    for (site, _), n in solution.racks.items():
        racks[site] = racks.get(site, 0) + n
    return (
        tuple(sorted(choices)),
        servers,
        tuple(sorted((site, n) for site, n in racks.items() if n)),
    )


def describe(key: PlanKey, base: PlanKey) -> str:
    """The plan `key` in words, naming only the deployments that differ from `base`."""
    if key == NO_PLAN:
        return "no feasible plan"
    if key == NOT_FOUND:
        return "no plan found within the time limit (none proven impossible)"
    mine = {c[0]: c for c in base[0]} if base not in (NO_PLAN, NOT_FOUND) else {}
    parts = []
    for w, mode, what, count, site in key[0]:
        if mine.get(w) == (w, mode, what, count, site):
            continue
        if mode == "rent":
            parts.append(f"{w}: rent {count} x {what}")
        else:
            parts.append(f"{w}: {count} x {what} at {site}")
    if parts:
        return "; ".join(parts)
    return "same deployments, different servers or racks: " + ", ".join(
        f"{n} x {sku} at {site}" for sku, site, n in key[1]
    )


# --------------------------------------------------------------------------- parameters


def parameters(
    solution: Solution,
    instance: Instance,
    catalog: Catalog,
    currency: str,
    cards: Iterable[str] = (),
    rivals: Iterable[str] = (),
) -> list[Parameter]:
    """Every price that enters the plan's cost (zero prices cannot move by a factor and are
    left out), then the efficiency of each card in `cards` (the plan's) and `rivals` (the
    other cards the candidates considered)."""
    prices = price_parameters(solution, instance, catalog, currency)
    return prices + efficiency_parameters(cards, rivals)


def price_parameters(
    solution: Solution, instance: Instance, catalog: Catalog, currency: str
) -> list[Parameter]:
    """Every price that enters the plan's cost, but zero prices (no factor moves them)."""
    out: list[Parameter] = []
    for sku in sorted({sku for (sku, _), n in solution.servers.items() if n}):
        server = catalog.servers[sku]
        out.append(
            Parameter("server_price", sku, f"price of {sku}", f"{currency}/server", server.price)
        )
    sites = sorted({site for (_, site), n in solution.servers.items() if n})
    for site_id in sites:
        offer = catalog.colo_offers[site_id]
        if offer.rack_price_per_month > 0:
            out.append(
                Parameter(
                    "rack_rent",
                    site_id,
                    f"rack rent at {site_id}",
                    f"{currency}/rack-month",
                    offer.rack_price_per_month,
                )
            )
        if offer.power_price_per_kwh > 0 and not offer.power_included:
            out.append(
                Parameter(
                    "power_price",
                    site_id,
                    f"power price at {site_id}",
                    f"{currency}/kWh",
                    offer.power_price_per_kwh,
                )
            )
        if offer.bandwidth_price_per_mbps_month > 0:
            out.append(
                Parameter(
                    "bandwidth_price",
                    site_id,
                    f"bandwidth price at {site_id}",
                    f"{currency}/Mbps-month",
                    offer.bandwidth_price_per_mbps_month,
                )
            )
    cloud = {o.key: o for o in instance.cloud}
    for offer_id in sorted({cloud[c.option].offer for c in solution.choices if c.option in cloud}):
        price = catalog.cloud_offers[offer_id].price_per_hour
        out.append(
            Parameter(
                "cloud_price", offer_id, f"price of {offer_id}", f"{currency}/instance-hour", price
            )
        )
    for kind, item_id, unit, price in bought_network(solution, instance, catalog):
        out.append(Parameter(kind, item_id, f"price of {item_id}", f"{currency}/{unit}", price))
    return out


def efficiency_parameters(cards: Iterable[str], rivals: Iterable[str] = ()) -> list[Parameter]:
    """The efficiency of each card in `cards` (the plan's: searched both ways), then of
    each other card in `rivals` (searched upwards only)."""
    out: list[Parameter] = []
    for card in sorted(set(cards)):
        out.append(Parameter("efficiency", card, f"efficiency of {card}", "x modelled speed", 1.0))
    for card in sorted(set(rivals) - set(cards)):
        words = f"efficiency of {card} (not in the plan)"
        out.append(Parameter("efficiency", card, words, "x modelled speed", 1.0, rival=True))
    return out


def bought_network(
    solution: Solution, instance: Instance, catalog: Catalog
) -> list[tuple[SensitivityKind, str, str, float]]:
    """(kind, catalogue id, unit, catalogue price) of each priced switch, link, NIC and
    storage node the plan buys (`network_lines` itemises the same purchase)."""
    from gpusolve.candidates.network import nic_for, rack_network

    found: dict[str, tuple[SensitivityKind, str, float]] = {}

    def add(kind: SensitivityKind, item_id: str, unit: str, price: float) -> None:
        if price > 0:
            found.setdefault(item_id, (kind, unit, price))

    for (_, cls), count in solution.fabric.items():
        fabric = instance.fabrics[cls]
        if count.switches and fabric.switch in catalog.switches:
            add("network_price", fabric.switch, "switch", catalog.switches[fabric.switch].price)
        if count.ports and fabric.link in catalog.links:
            add("network_price", fabric.link, "link", catalog.links[fabric.link].price)
    on_fabric = {site for site, _ in solution.fabric}
    for (sku_id, site), n in solution.servers.items():
        sku = instance.skus[sku_id]
        if n and sku.nic_capex and site in on_fabric and sku_id in catalog.servers:
            nic = nic_for(catalog, catalog.servers[sku_id])
            if nic is not None:
                add("network_price", nic.id, "NIC", nic.price)
    racked = {site for (site, fill), n in solution.racks.items() if fill and n}
    tor = rack_network(catalog, 1.0)
    if tor is not None and any(instance.sites[s].rack_network_capex for s in racked):
        add("network_price", tor.switch.id, "switch", tor.switch.price)
        if tor.uplink is not None and tor.switch.uplinks:
            add("network_price", tor.uplink.id, "link", tor.uplink.price)
    for (_, kind_id), nodes in solution.storage.items():
        if nodes and kind_id in catalog.storage:
            add("storage_price", kind_id, "storage node", catalog.storage[kind_id].price)
    return [(kind, i, unit, price) for i, (kind, unit, price) in sorted(found.items())]


def network_instance(base: Instance, inputs: Inputs, item_id: str, factor: float) -> Instance:
    """The plan's instance with one network or storage item's catalogue price scaled,
    priced again by the candidates stage's functions: the fabrics, each server model's
    NICs bought apart, each site's rack network and storage nodes."""
    from gpusolve.candidates.generate import fabric_classes, vat_factors
    from gpusolve.candidates.network import nic_capex, rack_network, storage_kinds

    catalog = scale_item(inputs.catalog, item_id, factor)
    goods, _ = vat_factors(inputs.reqs)
    servers = [catalog.servers[k] for k in base.skus if k in catalog.servers]
    skus = {
        k: replace(s, nic_capex=nic_capex(catalog, catalog.servers[k], goods))
        if k in catalog.servers
        else s
        for k, s in base.skus.items()
    }
    tor = rack_network(catalog, goods)
    storage = storage_kinds(catalog, goods)
    sites = {
        k: replace(s, rack_network_capex=tor.capex if tor else 0, storage=storage)
        for k, s in base.sites.items()
    }
    fabrics = {**base.fabrics, **fabric_classes(catalog, servers, inputs.reqs)}
    return replace(base, skus=skus, sites=sites, fabrics=fabrics)


def scale_item(catalog: Catalog, item_id: str, factor: float) -> Catalog:
    """`catalog` with the switch, link, NIC or storage node `item_id` at `factor` x its price."""
    update: dict[str, object] = {}
    from gpusolve.models.catalog import PART_KINDS

    for kind in PART_KINDS:
        items = getattr(catalog, kind)
        if item_id in items:
            item = items[item_id]
            update[kind] = {
                **items,
                item_id: item.model_copy(update={"price": item.price * factor}),
            }
    if not update:
        raise KeyError(f"{item_id} is no network or storage item of the catalogue")
    return catalog.model_copy(update=update)


def _money(value: int, factor: float) -> int:
    return round(value * factor)  # half-even, as the candidates stage rounds


def scale_instance(
    instance: Instance, kind: SensitivityKind, subject: str, factor: float
) -> Instance:
    """`instance` with one price multiplied by `factor`: every coefficient proportional to
    it (efficiency is not a price: see `scale_card`).

    A server's price sets its capex and its residual value (a share of the price,
    `finance.residual_value`); a site's power price its idle energy per server-month and
    each placement's energy above idle there (`busy_energy`); its bandwidth price the
    included line and each Mbps beyond it."""
    if kind == "server_price":
        sku = instance.skus[subject]
        scaled = replace(
            sku, capex=_money(sku.capex, factor), residual=_money(sku.residual, factor)
        )
        skus: dict[str, Sku] = {**instance.skus, subject: scaled}
        return replace(instance, skus=skus)
    if kind == "cloud_price":
        cloud: tuple[CloudOption, ...] = tuple(
            replace(o, cost_total=_money(o.cost_total, factor)) if o.offer == subject else o
            for o in instance.cloud
        )
        return replace(instance, cloud=cloud)
    site = instance.sites[subject]
    owned = instance.owned
    if kind == "rack_rent":
        new: Site = replace(site, rack_rent_month=_money(site.rack_rent_month, factor))
    elif kind == "power_price":
        energy = {sku: _money(v, factor) for sku, v in site.energy_month.items()}
        new = replace(site, energy_month=energy)
        owned = tuple(_busy_energy_scaled(o, subject, factor) for o in owned)
    elif kind == "bandwidth_price":
        new = replace(
            site,
            bandwidth_month=_money(site.bandwidth_month, factor),
            extra_mbps_cost=_money(site.extra_mbps_cost, factor),
        )
    else:
        raise ValueError(f"{kind} is not a price of the instance")
    return replace(instance, sites={**instance.sites, subject: new}, owned=owned)


def _busy_energy_scaled(option: OwnedOption, site: str, factor: float) -> OwnedOption:
    if not any(p.site == site and p.busy_energy for p in option.placements):
        return option
    placements = tuple(
        replace(p, busy_energy=_money(p.busy_energy, factor)) if p.site == site else p
        for p in option.placements
    )
    return replace(option, placements=placements)


def scale_card(card: Card, factor: float) -> Card:
    """The card running every kernel `factor` times as fast as the model says: its tensor
    peaks, measured matmul rate and memory bandwidth scaled (FP32 and links kept)."""
    tflops = card.tflops.model_copy(
        update={
            name: getattr(card.tflops, name) * factor
            for name in ("tf32", "bf16", "fp16", "fp8", "int8")
            if getattr(card.tflops, name) is not None
        }
    )
    update: dict[str, object] = {
        "tflops": tflops,
        "memory_bandwidth_gbs": card.memory_bandwidth_gbs * factor,
    }
    if card.mamf_tflops is not None:
        mamf = card.mamf_tflops
        update["mamf_tflops"] = mamf.model_copy(
            update={
                "bf16": None if mamf.bf16 is None else mamf.bf16 * factor,
                "fp8": None if mamf.fp8 is None else mamf.fp8 * factor,
            }
        )
    return card.model_copy(update=update)


def plan_instance(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    whole: Catalog | None = None,
) -> Instance:
    """The instance `make_plan` solves: the candidates, small jobs rented only, work beyond
    the horizon dropped. `whole`: the full catalogue when `catalog` is a part of it (what
    counts as a small job depends on the fastest card of all)."""
    from gpusolve.candidates.filters import beyond_horizon, rent_only, small_jobs
    from gpusolve.candidates.generate import build_candidates

    cand = build_candidates(reqs, catalog, policies)
    small = small_jobs(reqs, whole or catalog)
    if small:
        cand = rent_only(cand, small)
    return beyond_horizon(cand, reqs).instance


def card_instance(base: Instance, inputs: Inputs, card_id: str, factor: float) -> Instance:
    """The plan's instance with one card's efficiency scaled: only the options on that
    card's servers and cloud offers are generated again (every other option is untouched
    by it), merged in the order a full generation gives (workload, then catalogue order),
    so the tie-break ranks are the same as generating everything again."""
    whole = inputs.catalog
    card = scale_card(whole.cards[card_id], factor)
    scaled = whole.model_copy(update={"cards": {**whole.cards, card_id: card}})
    mine_servers = {k for k, s in whole.servers.items() if s.card == card_id}
    mine_offers = {k for k, o in whole.cloud_offers.items() if o.card == card_id}
    part_catalog = scaled.model_copy(
        update={
            "servers": {k: whole.servers[k] for k in mine_servers},
            "cloud_offers": {k: whole.cloud_offers[k] for k in mine_offers},
        }
    )
    part = plan_instance(inputs.reqs, part_catalog, inputs.policies, whole=scaled)
    workload = {w: i for i, w in enumerate(base.workloads)}
    server = {k: i for i, k in enumerate(whole.servers)}
    offer = {k: i for i, k in enumerate(whole.cloud_offers)}
    owned = sorted(
        [o for o in base.owned if o.sku not in mine_servers] + list(part.owned),
        key=lambda o: (workload[o.workload], server[o.sku]),
    )
    cloud = sorted(
        [c for c in base.cloud if c.offer not in mine_offers] + list(part.cloud),
        key=lambda c: (workload[c.workload], offer[c.offer]),
    )
    sites = {
        k: base.sites.get(k) or part.sites[k]
        for k in whole.colo_offers
        if k in base.sites or k in part.sites
    }
    skus = {k: base.skus.get(k) or part.skus[k] for k in server if k in base.skus or k in part.skus}
    return replace(
        base,
        owned=tuple(owned),
        cloud=tuple(cloud),
        sites=sites,
        skus=skus,
        requirements={**base.requirements, **part.requirements},
        fabrics={**base.fabrics, **part.fabrics},
    )


# --------------------------------------------------------------------------- the search

SolveAt = Callable[[float], Probe]


def find_edge(
    solve_at: SolveAt, base: PlanKey, limit: float, step: float = STEP, rel_tol: float = REL_TOL
) -> tuple[Edge, int]:
    """The end of the range towards `limit` (below or above 1) and the solves it took.

    Geometric steps of `step` from 1 until the plan changes or the limit is reached, then
    bisection (geometric midpoints) until the last factor that keeps the plan and the first
    that changes it are within `rel_tol` of each other."""
    up = limit > 1.0
    inside = 1.0
    solves = 0
    outside: Probe | None = None
    factor = 1.0
    while (factor < limit) if up else (factor > limit):
        factor = min(factor * step, limit) if up else max(factor / step, limit)
        probe = solve_at(factor)
        solves += 1
        if probe.key != base:
            outside = probe
            break
        inside = factor
    if outside is None:
        return Edge(inside, None), solves
    while abs(outside.factor / inside - 1.0) > rel_tol:
        mid = math.sqrt(inside * outside.factor)
        probe = solve_at(mid)
        solves += 1
        if probe.key == base:
            inside = mid
        else:
            outside = probe
    return Edge(inside, outside), solves


@dataclass(frozen=True)
class Task:
    """One parameter's whole analysis: everything a pool worker needs, picklable."""

    parameter: Parameter
    instance: Instance  # the plan's instance (prices scale it)
    base_solution: Solution  # the plan: the hint for every probe
    base_key: PlanKey
    config: SolveConfig

    def analyse(self, inputs: Any) -> Outcome:
        return analyse_one(self, inputs)


class AnyTask(Protocol):
    """What the pool runs: a parameter's task (`Task`, `scenario_sensitivity.ScenarioTask`)."""

    @property
    def parameter(self) -> Parameter: ...

    def analyse(self, inputs: Any) -> Outcome: ...


@dataclass(frozen=True)
class Inputs:
    """What generating the candidates again takes (efficiency parameters). The rule
    policies hold compiled CEL programs, which do not pickle: pool workers get these by
    inheritance at fork (`run_tasks`), never through the task queue."""

    reqs: Requirements
    catalog: Catalog
    policies: dict[str, WorkloadPolicy]


def probe_solve(instance: Instance, config: SolveConfig, hint_from: Solution | None) -> Solution:
    """A re-solve of `instance` started from the choices of `hint_from` (partial hint:
    options of the same key and site are set, every other choice unset)."""
    from gpusolve.optimize.model import build
    from gpusolve.optimize.solve import solve_built

    built = build(instance)
    hint: dict[int, int] | None = None
    if hint_from is not None and hint_from.choices:
        chosen = {(c.option, c.site) for c in hint_from.choices}
        hint = {o.var.index: int((o.option.key, o.placement.site) in chosen) for o in built.owned}
        hint |= {c.var.index: int((c.option.key, None) in chosen) for c in built.cloud}
    return solve_built(built, config, hint=hint).solution


# Parameters priced again from a scaled catalogue copy, not by scaling coefficients.
_FROM_CATALOGUE = ("efficiency", "network_price", "storage_price")


def scaled_instance(
    p: Parameter, instance: Instance, inputs: Inputs | None, factor: float
) -> Instance:
    """`instance` with parameter `p` at `factor` x its value."""
    if p.kind not in _FROM_CATALOGUE:
        return scale_instance(instance, p.kind, p.subject, factor)
    if inputs is None:
        raise ValueError(f"a {p.kind} parameter needs the run's inputs")
    if p.kind == "efficiency":
        return card_instance(instance, inputs, p.subject, factor)
    return network_instance(instance, inputs, p.subject, factor)


def analyse_one(task: Task, inputs: Inputs | None = None) -> Outcome:
    """Both ends of one parameter's range (a pool worker's whole job)."""

    def solve_at(factor: float) -> Probe:
        instance = scaled_instance(task.parameter, task.instance, inputs, factor)
        solution = probe_solve(instance, task.config, task.base_solution)
        key = plan_key(solution, instance)
        tco = solution.costs.tco if solution.costs is not None else None
        return Probe(factor, key, describe(key, task.base_key), tco)

    return both_ends(task.parameter, solve_at, task.base_key)


def both_ends(parameter: Parameter, solve_at: SolveAt, base_key: PlanKey) -> Outcome:
    lo_limit, hi_limit = parameter.limits
    low, n_low = Edge(lo_limit, None), 0  # a rival slower: provably the same plan
    if not parameter.rival:
        low, n_low = find_edge(solve_at, base_key, lo_limit)
    high, n_high = find_edge(solve_at, base_key, hi_limit)
    return Outcome(parameter, low, high, n_low + n_high)


def _value(current: float, factor: float) -> float:
    """A factor as a value, to 6 significant digits: the bisection's 1 % is far coarser,
    and 9.600000000000001 reads as noise."""
    return float(f"{current * factor:.6g}")


def to_range(outcome: Outcome) -> SensitivityRange:
    p = outcome.parameter
    lo_limit, hi_limit = p.limits
    low, high = outcome.low, outcome.high
    return SensitivityRange(
        kind=p.kind,
        subject=p.subject,
        parameter=p.words,
        unit=p.unit,
        current=p.current,
        low=None if low.outside is None else _value(p.current, low.inside),
        high=None if high.outside is None else _value(p.current, high.inside),
        searched_low=_value(p.current, lo_limit),
        searched_high=_value(p.current, hi_limit),
        below=None if low.outside is None else low.outside.description,
        above=None if high.outside is None else high.outside.description,
        below_tco=None if low.outside is None else low.outside.tco,
        above_tco=None if high.outside is None else high.outside.tco,
    )


OnDone = Callable[[Outcome], None]

# A pool worker's copy of the run's inputs (an `Inputs`, or one per scenario), set once by
# `_adopt` when the worker starts.
_WORKER_INPUTS: list[Any] = [None]


def _adopt(inputs: Any) -> None:
    # Ctrl-C reaches the whole process group: the parent alone answers it (`run_tasks`).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_INPUTS[0] = inputs


def _pooled(task: AnyTask) -> Outcome:
    return task.analyse(_WORKER_INPUTS[0])


class Stop:
    """Ends an analysis from another thread: no task starts after `stop`, the searches
    running in this process end (`interrupt.request_stop`), the pool's workers are
    terminated."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.pool: ProcessPoolExecutor | None = None

    def stop(self) -> None:
        from gpusolve.optimize import interrupt

        self.requested.set()
        interrupt.request_stop()
        if self.pool is not None:
            _terminate(self.pool)


def _terminate(pool: ProcessPoolExecutor) -> None:
    # The executor's public API only cancels tasks not yet started; a parameter's task
    # can run for seconds.
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


class Stopped(Exception):
    """The analysis was stopped (`Stop`) before it finished."""


def run_tasks(
    tasks: Sequence[AnyTask],
    workers: int,
    inputs: Any = None,
    on_done: OnDone = lambda _: None,
    stop: Stop | None = None,
) -> list[Outcome]:
    """Every task's outcome, in the tasks' order: over a process pool of `workers` (one
    task per parameter), in this process when one worker or one task is enough or where
    processes cannot fork (the inputs reach the workers through the fork, not a pickle)."""
    stop = stop or Stop()
    forks = "fork" in multiprocessing.get_all_start_methods()
    if workers <= 1 or len(tasks) <= 1 or not forks:
        results = []
        for task in tasks:
            if stop.requested.is_set():
                raise Stopped
            results.append(task.analyse(inputs))
            on_done(results[-1])
        return results
    found: dict[int, Outcome] = {}
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_adopt,
        initargs=(inputs,),
    )
    stop.pool = pool
    try:
        # The longest first: an efficiency parameter generates the candidates at every
        # probe and takes several times a price's time, so it must not start last.
        order = sorted(range(len(tasks)), key=lambda i: tasks[i].parameter.kind != "efficiency")
        futures = {pool.submit(_pooled, tasks[i]): i for i in order}
        for future in as_completed(futures):
            found[futures[future]] = future.result()
            on_done(found[futures[future]])
    except BaseException as exc:
        _terminate(pool)  # a failed task or a stop: end the others now
        if stop.requested.is_set():
            raise Stopped from exc
        raise
    pool.shutdown()
    return [found[i] for i in range(len(tasks))]


def default_workers() -> int:
    return max(
        1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )


def analyse(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: SolveConfig,
    workers: int,
    on_done: OnDone = lambda _: None,
    on_start: Callable[[int], None] = lambda _: None,
    efficiency: bool = True,
    stop: Stop | None = None,
    expected: tuple[tuple[Any, ...], ...] | None = None,
) -> Sensitivity:
    """The sensitivity of the plan for `reqs`: its instance solved again (the reference
    every probe is compared with), then every parameter's range over the pool (prices
    only unless `efficiency`). `expected`: the deployments of the plan shown
    (`shown_choices`); a reference that differs raises `OtherPlan`. The reference gets the
    whole of `config`'s time limit, each probe at most `PROBE_TIME_S` of it."""
    started = time.perf_counter()
    instance = plan_instance(reqs, catalog, policies)
    base = probe_solve(instance, replace(config, workers=1), None)
    base_key = plan_key(base, instance)
    found = base_key not in (NO_PLAN, NOT_FOUND)
    if expected is not None and (not found or base_key[0] != expected):
        raise OtherPlan(describe(base_key, NO_PLAN))
    if not found:
        return Sensitivity(wall_s=time.perf_counter() - started, solves=1)
    # The pool is the parallelism; a probe starts from the plan (the hint) and is small.
    probe_config = replace(config, workers=1, time_limit_s=min(config.time_limit_s, PROBE_TIME_S))
    cards = plan_cards(base, instance, catalog) if efficiency else []
    rivals = considered_cards(instance, catalog) if efficiency else []
    params = parameters(base, instance, catalog, reqs.currency, cards, rivals)
    tasks = [Task(p, instance, base, base_key, probe_config) for p in params]
    on_start(len(tasks))
    outcomes = run_tasks(tasks, workers, Inputs(reqs, catalog, policies), on_done, stop)
    return Sensitivity(
        ranges=[to_range(o) for o in outcomes],
        solves=1 + sum(o.solves for o in outcomes),
        wall_s=round(time.perf_counter() - started, 3),
    )


class OtherPlan(Exception):
    """The reference re-solve found another plan than the one shown (which was then not
    proven optimal): ranges around it would describe a plan the user does not see."""


def shown_choices(plan: Plan) -> tuple[tuple[Any, ...], ...]:
    """The plan's deployments as `plan_key` writes a plan's choices."""
    return tuple(
        sorted(
            (d.workload, "own", d.server, d.servers, d.site or "")
            if d.mode == "owned"
            else (d.workload, "rent", d.cloud_offer, d.servers, "")
            for d in plan.deployments
        )
    )


def considered_cards(instance: Instance, catalog: Catalog) -> list[str]:
    """Every card some candidate of the instance runs on."""
    cards = {catalog.servers[o.sku].card for o in instance.owned}
    cards |= {catalog.cloud_offers[o.offer].card for o in instance.cloud}
    return sorted(cards)


def plan_cards(solution: Solution, instance: Instance, catalog: Catalog) -> list[str]:
    """The cards the plan runs on: of each server it buys and each cloud offer it rents."""
    cards = {catalog.servers[sku].card for (sku, _), n in solution.servers.items() if n}
    cloud = {o.key: o for o in instance.cloud}
    cards |= {
        catalog.cloud_offers[cloud[c.option].offer].card
        for c in solution.choices
        if c.option in cloud
    }
    return sorted(cards)


def progress_bar(total: int, enabled: bool) -> Any:
    """A progress bar on stderr (tqdm), drawn only on a terminal: logs and pipes stay clean."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="gpusolve: sensitivity",
        unit="parameter",
        file=sys.stderr,
        disable=not enabled or not sys.stderr.isatty(),
        leave=False,
    )


T = TypeVar("T")
# After a stop, how long the analysis may take to notice before the command exits anyway.
STOP_GRACE_S = 5.0


def stoppable(work: Callable[[], T], stop: Stop) -> T:
    """`work` in a thread while this (main) thread answers Ctrl-C and SIGTERM: `stop`, then
    KeyboardInterrupt here. The main thread only waits, so the signal is handled at once
    and never inside a CP-SAT search, whose own handling of SIGINT ends that search and
    carries on (a solve that catches SIGINT itself even resets the handler; it is put
    back every 50 ms, as `interrupt.run_interruptibly` does). Off the main thread (no
    signals there) `work` simply runs."""
    from gpusolve.optimize.interrupt import in_worker_thread

    if threading.current_thread() is not threading.main_thread():
        return work()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def on_break(worker: threading.Thread) -> None:
        stop.stop()
        worker.join(STOP_GRACE_S)  # out of CP-SAT before the interpreter exits

    return in_worker_thread(work, on_signal, "gpusolve-sensitivity", on_break=on_break)


def with_sensitivity(
    plan: Plan,
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    config: SolveConfig,
    *,
    bar: bool = True,
    workers: int | None = None,
    timings: bool = False,
    robust: str = "expected",
) -> Plan:
    """`plan` with its sensitivity filled in (plans only: a run without one is returned as
    it is). Each probe gets at most `PROBE_TIME_S` of the run's time limit. The wall time
    is kept only with `timings`, as the plan's own: the same input gives the same output.
    A plan hedged over `reqs.scenarios` is analysed on its two-stage model
    (`scenario_sensitivity`, objective `robust`)."""
    if plan.status not in ("optimal", "feasible"):
        return plan
    progress: list[Any] = []

    def start(total: int) -> None:
        progress.append(progress_bar(total, bar))

    def done(_: Outcome) -> None:
        progress[0].update(1)

    stop = Stop()
    pool = workers or default_workers()

    def work() -> Sensitivity:
        if reqs.scenarios:
            from gpusolve.analyses.hedged_sensitivity import analyse_hedged, plan_purchase

            return analyse_hedged(
                reqs,
                catalog,
                policies,
                config,
                "worst" if robust == "worst" else "expected",
                pool,
                plan_purchase(plan),
                on_done=done,
                on_start=start,
                stop=stop,
            )
        return analyse(
            reqs,
            catalog,
            policies,
            config,
            pool,
            on_done=done,
            on_start=start,
            stop=stop,
            expected=shown_choices(plan),
        )

    try:
        result = stoppable(work, stop)
    except OtherPlan as other:
        note = (
            f"--sensitivity: solved again, the plan is not the one shown ({other}): the plan "
            "shown is not proven optimal, so no ranges are given (try a longer --time-limit)"
        )
        return plan.model_copy(update={"warnings": [*plan.warnings, note]})
    finally:
        for shown in progress:
            shown.close()
    if not timings:
        result = result.model_copy(update={"wall_s": 0.0})
    return plan.model_copy(update={"sensitivity": result})
