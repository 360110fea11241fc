"""Prices as the optimiser reads them: server SKUs and colocation sites in whole units of
the run currency (VAT, finance terms, residual value), fabrics, rental tiers and hours."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping

from gpusolve.candidates.builder import Builder
from gpusolve.candidates.network import (
    fabric_class,
    nic_capex,
    rack_network,
    servers_per_rack,
    storage_kinds,
)
from gpusolve.candidates.reserve import RackReserve
from gpusolve.estimate import ConfigEstimate
from gpusolve.models.catalog import Catalog, CloudOffer, ColoOffer, Server
from gpusolve.models.money import slot_hours_per_month, to_money
from gpusolve.models.params import Params
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.optimize import finance, ir


def vat_factors(reqs: Requirements) -> tuple[float, float]:
    """(goods, services) price multipliers: 1 + VAT when the requirements add it."""
    vat = reqs.finance.vat
    if vat is None:
        return 1.0, 1.0
    return 1.0 + vat.goods, 1.0 + vat.services


def finance_terms(
    reqs: Requirements, policies: Mapping[str, WorkloadPolicy] | None = None
) -> finance.Terms:
    """The plan-level finance parameters: the requirements' `finance:` where it sets them,
    else the rules' parameters, the most cautious over the workloads when rules set them
    differently (the most idle power, the shortest life, the least salvage)."""
    params = [p.params for p in (policies or {}).values()] or [Params()]
    f = reqs.finance
    salvage = min(p.server_salvage_fraction for p in params)
    return finance.Terms(
        idle_power_fraction=max(p.idle_power_fraction for p in params),
        useful_life_months=f.useful_life_months or min(p.server_useful_life_months for p in params),
        salvage_fraction=salvage if f.salvage_fraction is None else f.salvage_fraction,
        residual_value=f.residual_value,
        resale_curve=tuple((p.month, p.fraction) for p in f.resale_curve or ()),
    )


def residual_share(reqs: Requirements, terms: finance.Terms) -> float:
    """Share of its price an owned server is credited at the end of the horizon (0 when
    the requirements leave residual value out, the default)."""
    return finance.credit_fraction(reqs.horizon_months, terms)


def rental(
    b: Builder, w: Workload, offer: CloudOffer, estimate: ConfigEstimate
) -> tuple[float, finance.Tier, int]:
    """Renting `estimate`'s layout on `offer`: hours of use, the price tier, the whole cost
    over the horizon (VAT on services in)."""
    hours = rental_hours(w, estimate, b.reqs.horizon_months)
    _, services = vat_factors(b.reqs)
    tier = rental_tier(w, estimate, offer, hours, b.reqs.horizon_months)
    return hours, tier, to_money(estimate.nodes * tier.cost * services)


def rental_tier(
    w: Workload, estimate: ConfigEstimate, offer: CloudOffer, hours: float, horizon_months: int
) -> finance.Tier:
    """The cheapest price tier this rental's use allows, per instance (`finance.py`)."""
    continuous = not w.is_training or not estimate.time_to_train_s
    per_run = (estimate.time_to_train_s or 0) / 3600
    held, span = finance.rental_months(continuous, w.runs, per_run, horizon_months)
    reserved = [(r.term_months, r.price_per_month) for r in offer.reserved]
    tiers = finance.cloud_tiers(
        hours, offer.price_per_hour, offer.price_per_month, reserved, held, span
    )
    return finance.cheapest_tier(tiers)


def rental_hours(w: Workload, estimate: ConfigEstimate, horizon_months: int) -> float:
    """Training rents for the runs' duration; a service rents for every hour it is up."""
    if not w.is_training or not estimate.time_to_train_s:
        return slot_hours_per_month(w.schedule) * horizon_months
    return float(estimate.time_to_train_s / 3600 * w.runs)


def owned_busy_hours(w: Workload, estimate: ConfigEstimate, horizon_months: int) -> float:
    """Hours owned servers run this workload over the horizon, within its slot's hours."""
    return finance.busy_hours(
        rental_hours(w, estimate, horizon_months), slot_hours_per_month(w.schedule), horizon_months
    )


# --- sites ------------------------------------------------------------------------


def site_offers(b: Builder) -> dict[str, ir.Site]:
    skus: dict[str, set[str]] = defaultdict(set)  # site -> the server models placed there
    for o in b.owned:
        for p in o.placements:
            skus[p.site].add(o.sku)
    return {
        offer.id: price_site(
            offer, b.catalog, b.reqs, b.reserves.get(offer.id), b.terms, skus[offer.id]
        )
        for offer in b.catalog.colo_offers.values()
        if offer.id in skus
    }


def fabric_classes(
    catalog: Catalog, servers: Iterable[Server], reqs: Requirements
) -> dict[str, ir.FabricClass]:
    """The compute fabrics these servers' NICs join (`candidates/network.py`), by id."""
    goods, _ = vat_factors(reqs)
    out: dict[str, ir.FabricClass] = {}
    for server in servers:
        fabric = fabric_class(catalog, server, reqs.network.oversubscription, goods)
        if fabric is not None:
            out.setdefault(fabric.id, fabric)
    return out


def price_sku(
    server: Server,
    reqs: Requirements,
    catalog: Catalog,
    terms: finance.Terms | None = None,
) -> ir.Sku:
    """A server model as the optimiser prices it (VAT, residual value, the fabric its NICs
    join and the NICs it lacks): one place, so that every stage building an instance
    (scenarios, sensitivity) prices it the same way."""
    goods, _ = vat_factors(reqs)
    terms = terms or finance_terms(reqs)
    fabric = fabric_class(catalog, server, reqs.network.oversubscription, goods)
    return ir.Sku(
        id=server.id,
        capex=to_money(server.price * goods),
        power_w=round(server.power_kw * 1000),
        rack_units=server.rack_units,
        cooling=frozenset(server.cooling),
        residual=finance.residual_value(server.price * goods, residual_share(reqs, terms)),
        fabric=fabric.id if fabric is not None else None,
        nics=server.fabric.nics if fabric is not None else 0,
        nic_capex=nic_capex(catalog, server, goods),
        lead_time_days=round(server.lead_time_weeks * 7),
    )


def price_site(
    offer: ColoOffer,
    catalog: Catalog,
    reqs: Requirements,
    reserve: RackReserve | None = None,
    terms: finance.Terms | None = None,
    skus: Collection[str] | None = None,
    rack_servers: int | None = None,
) -> ir.Site:
    """A colo offer as the optimiser prices it: idle energy per server model (what each
    workload draws above idle is its placement's `busy_energy`), bandwidth, terms, VAT;
    racks hold servers within what the rack reserve leaves (`reserve.py`), and each its
    top-of-rack and management switches sized for the most servers of `skus` (every
    catalogue server when None) a rack holds, or for `rack_servers` where given, and its
    PDUs where the rent lacks them."""
    goods, services = vat_factors(reqs)
    fraction = (terms or finance_terms(reqs)).idle_power_fraction
    rack_w = reserve.usable_w if reserve else round(offer.rack_kw * 1000)
    rack_units = reserve.usable_units if reserve else offer.rack_units
    if rack_servers is None:
        models = [s for s in catalog.servers.values() if skus is None or s.id in skus]
        rack_servers = servers_per_rack(rack_w, rack_units, offer.cooling, models)
    # Each PDU feed carries the whole contracted rack alone (`network.PDU_FEEDS`).
    pdu_feed_w = 0 if offer.pdus_included else round(offer.rack_kw * 1000)
    own = rack_network(catalog, goods, rack_servers, pdu_feed_w)
    h = reqs.horizon_months
    price = goods * finance.energy_price_per_kwh(
        offer.pue, offer.power_price_per_kwh, offer.power_included
    )
    energy = {
        s.id: finance.idle_energy_month(
            finance.idle_power_kw(s.power_kw, s.idle_power_kw, fraction), price
        )
        for s in catalog.servers.values()
    }
    return ir.Site(
        id=offer.id,
        region=offer.region,
        cooling=offer.cooling,
        rack_w=rack_w,
        rack_units=rack_units,
        racks_available=offer.racks_available,
        rack_rent_month=to_money(offer.rack_price_per_month * services),
        bandwidth_month=to_money(
            offer.bandwidth_mbps * offer.bandwidth_price_per_mbps_month * services
        ),
        energy_month=energy,
        bandwidth_mbps=math.ceil(offer.bandwidth_mbps),
        extra_mbps_cost=to_money(h * offer.bandwidth_price_per_mbps_month * services),
        rent_months=max(h, offer.min_term_months or 0),
        setup_fee=to_money(offer.setup_fee * services),
        # The rack's reserve holds its own switches and PDUs, the fabric switches and
        # storage (`fabric.py`).
        reserved_w=reserve.reserved_w if reserve else 0,
        reserved_units=reserve.reserved_units if reserve else 0,
        rack_network_capex=own.capex,
        rack_servers=rack_servers,
        rack_network_w=own.power_w,
        rack_network_units=own.rack_units,
        pdu_feed_w=pdu_feed_w,
        storage=storage_kinds(catalog, goods),
    )
