"""The options of one workload: on owned servers at each colocation site that can host
them, and on each cloud offer, priced and tagged with the requirements they break."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gpusolve.candidates.builder import (
    Builder,
    interned_charges,
    region_ok,
    region_requirement,
    rule_requirement,
    unique_key,
)
from gpusolve.candidates.fleets import full_fleets
from gpusolve.candidates.network import (
    storage_need_gb,
)
from gpusolve.candidates.pricing import owned_busy_hours, rental, vat_factors
from gpusolve.candidates.records import MULTI_NODE_FABRICS, OptionMeta
from gpusolve.candidates.sizing import (
    Sized,
    cannot_host,
    charges_on,
    fabric_groups,
    node_limit,
    size_layouts,
)
from gpusolve.estimate import ConfigEstimate, Hardware
from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Server
from gpusolve.models.policy import Charge, charges, share_terms
from gpusolve.models.requirements import Workload
from gpusolve.optimize import finance, ir

# The tags of a placement that breaks nothing, one object for all of them: CPython makes a
# new empty frozenset per call (216 bytes), and the market scale has hundreds of thousands
# of placements, nearly all without tags.
NO_TAGS: frozenset[str] = frozenset()


def owned_options(b: Builder, w: Workload) -> None:
    params = b.policies[w.name].params
    for server in b.catalog.servers.values():
        card = b.catalog.cards[server.card]
        groups = fabric_groups(b.catalog, server, b.reqs.network.oversubscription)
        for ratio, offers in groups:
            hw = Hardware.from_server(server, card).with_oversubscription(ratio)
            spans = w.is_training  # replicas behind a load balancer need no fabric
            limit = node_limit(server, offers, needs_fabric=spans, reserves=b.reserves)
            if not params.allow_multi_node:
                limit = 1
            most = min(limit, params.max_nodes)
            sized = size_layouts(b, w, card, "server", server, hw, most)
            sized += full_fleets(b, w, card, "server", server, hw, most, sized)
            for one in sized:
                _add_owned(b, w, server, card, ratio, offers, one)


def _add_owned(
    b: Builder,
    w: Workload,
    server: Server,
    card: Card,
    ratio: float,
    offers: list[ColoOffer],
    sized: Sized,
) -> None:
    site_charges: dict[str, tuple[Charge, ...]] = {}
    goods, _ = vat_factors(b.reqs)
    # A preference an owned option misses is priced on what its servers cost.
    base = sized.estimate.nodes * server.price * goods
    placements = _placements(
        b, w, server, sized.spans_servers, sized.deployment, offers, base, site_charges
    )
    if not placements:
        return
    charged = charges_on(sized.missed, base)
    estimate = sized.estimate
    hours = owned_busy_hours(w, estimate, b.reqs.horizon_months)
    idle_kw = finance.idle_power_kw(
        server.power_kw, server.idle_power_kw, b.terms.idle_power_fraction
    )
    utilisation = w.utilisation if w.utilisation is not None else b.reqs.utilisation
    busy_kw = finance.busy_power_kw(server.power_kw, utilisation, idle_kw)
    placements = _with_busy_energy(b, estimate.nodes * (busy_kw - idle_kw) * hours, placements)
    placements = shared_placements(b, placements)
    key = f"{w.name}|{server.id}|{estimate.nodes}n"
    if ratio != 1.0:
        key += f"|os{ratio:g}"
    key = unique_key(b, key)
    b.owned.append(
        ir.OwnedOption(
            key=key,
            workload=w.name,
            sku=server.id,
            servers=estimate.nodes,
            slot=w.schedule,
            placements=tuple(placements),
            throughput=max(0, round(estimate.tokens_per_s)),
            headroom_permille=headroom_permille(estimate),
            penalty=sum(c.amount for c in charged),  # whole units: the charges add up
            violates=sized.violates,
            penalty_base=base,
            penalty_shares=share_terms(charged),
            spans=sized.spans_servers,
            # One server keeps its checkpoints on its own NVMe (H16); a job across servers
            # needs a filesystem they all reach.
            storage_gb=storage_need_gb(
                w.kind,
                estimate.checkpoint_bytes,
                b.policies[w.name].params.checkpoint_copies_kept,
                w.dataset_gb,
                b.policies[w.name].params.storage_fill_fraction,
            )
            if sized.spans_servers
            else 0,
            bandwidth_mbps=math.ceil(w.bandwidth_mbps or 0),
        )
    )
    b.meta[key] = OptionMeta(
        key,
        w.name,
        "owned",
        card.id,
        server.id,
        None,
        estimate.nodes,
        estimate,
        charges=charged,
        site_charges=site_charges,
        busy_hours=hours,
        busy_kw=busy_kw,
        idle_kw=idle_kw,
        lead_time_weeks=server.lead_time_weeks,
    )


def _with_busy_energy(
    b: Builder, busy_kwh: float, placements: list[ir.Placement]
) -> list[ir.Placement]:
    """Each placement with what the option's servers draw above idle there while the
    workload runs (`busy_kwh` at the servers, before the site's PUE and tariff)."""
    goods, _ = vat_factors(b.reqs)
    out = []
    for p in placements:
        offer = b.catalog.colo_offers[p.site]
        price = goods * finance.energy_price_per_kwh(
            offer.pue, offer.power_price_per_kwh, offer.power_included
        )
        out.append(dataclasses.replace(p, busy_energy=finance.busy_energy(busy_kwh, price)))
    return out


def shared_placements(b: Builder, placements: list[ir.Placement]) -> list[ir.Placement]:
    """Equal placements as one object. A catalogue of near-copies (one server quoted by
    several vendors, one site by several brokers) repeats the same placement for every
    copy: at sixteen copies of the shipped catalogue and 20 workloads the instance held
    997,376 placements, 149,472 of them distinct. They are frozen, so sharing is safe."""
    seen = b.placements_seen
    return [seen.setdefault(p, p) for p in placements]


def headroom_permille(estimate: ConfigEstimate) -> int:
    card_bytes = estimate.card_memory_bytes
    if card_bytes <= 0:
        return 0
    return max(0, round(1000 * (1 - estimate.memory_total_bytes / card_bytes)))


def _placements(
    b: Builder,
    w: Workload,
    server: Server,
    needs_fabric: bool,
    deployment: dict[str, Any],
    offers: list[ColoOffer],
    base: float,
    site_charges: dict[str, tuple[Charge, ...]] | None = None,
) -> list[ir.Placement]:
    policy = b.policies[w.name]
    out: list[ir.Placement] = []
    physical: list[str] = []
    for offer in offers:
        why = cannot_host(server, offer, needs_fabric, b.reserves.get(offer.id))
        if why:
            physical.append(f"{offer.id}: {why}")
            continue
        tags: set[str] = set()
        if not region_ok(b.reqs, w, offer.region, offer.city):
            if not b.explain:
                continue
            tags.add(region_requirement(b, w))
        context = {"workload": w, "deployment": deployment, "server": server}
        hits = policy.failed("offer", offer, context)
        if hits and not b.explain:
            continue
        tags |= {rule_requirement(b, h.rule, h.source, h.title) for h in hits}
        charged = interned_charges(
            b, charges("offer", policy.penalty("offer", offer, context), base)
        )
        if site_charges is not None and charged.charges:  # readers take a missing site as ()
            site_charges[offer.id] = charged.charges
        out.append(
            ir.Placement(
                offer.id,
                charged.amount,
                frozenset(tags) if tags else NO_TAGS,
                penalty_shares=charged.shares,
            )
        )
    if not out:
        if physical and len(physical) == len(offers):
            b.reject(w.name, server.id, ["no colo offer can host it: " + "; ".join(physical[:3])])
        else:
            b.reject(
                w.name,
                server.id,
                ["no colo offer that hosts it is allowed by the regions and site rules"],
            )
    return out


# --- cloud ------------------------------------------------------------------------


def cloud_options(b: Builder, w: Workload) -> None:
    params = b.policies[w.name].params
    for offer in b.catalog.cloud_offers.values():
        card = b.catalog.cards[offer.card]
        multi = offer.fabric in MULTI_NODE_FABRICS and params.allow_multi_node
        max_nodes = min(offer.max_instances, params.max_nodes) if multi else 1
        hw = Hardware.from_cloud(offer, card)
        sized = size_layouts(b, w, card, "cloud", offer, hw, max_nodes)
        sized += full_fleets(b, w, card, "cloud", offer, hw, max_nodes, sized)
        for one in sized:
            _add_cloud(b, w, offer, card, one)


def _add_cloud(b: Builder, w: Workload, offer: CloudOffer, card: Card, sized: Sized) -> None:
    tags = set(sized.violates)
    if not region_ok(b.reqs, w, offer.region, ""):
        if not b.explain:
            b.reject(w.name, offer.id, [f"region {offer.region} is not allowed for {w.name}"])
            return
        tags.add(region_requirement(b, w))
    estimate = sized.estimate
    hours, tier, cost_total = rental(b, w, offer, estimate)
    key = unique_key(b, f"{w.name}|cloud:{offer.id}|{estimate.nodes}i")
    # A preference a rental misses is priced on the rental over the horizon.
    charged = charges_on(sized.missed, cost_total)
    b.cloud.append(
        ir.CloudOption(
            key=key,
            workload=w.name,
            offer=offer.id,
            region=offer.region,
            instances=estimate.nodes,
            cost_total=cost_total,
            throughput=max(0, round(estimate.tokens_per_s)),
            headroom_permille=headroom_permille(estimate),
            penalty=sum(c.amount for c in charged),
            violates=frozenset(tags),
            penalty_shares=share_terms(charged),
        )
    )
    b.meta[key] = OptionMeta(
        key,
        w.name,
        "cloud",
        card.id,
        None,
        offer.id,
        estimate.nodes,
        estimate,
        hours,
        charges=charged,
        rental_tier=tier,
    )
