"""A catalogue or an instance with one figure changed, priced as the candidates stage
prices it: what a scenario changes (`plan/twostage.py`) and what the sensitivity analysis
probes (`analyses/sensitivity.py`).

Prices scale the optimiser's integral coefficients directly (rounded half-even, as the
candidates stage rounds them). A network or storage item's price is read by the
candidates stage's own pricing (`network.py`: the cheapest switch per port, the rack's ToR
and uplinks, the NICs a server lacks, VAT), so it is scaled in a catalogue copy priced
again through those functions. A card's efficiency is a property of the physics: the
card's compute peaks, measured matmul rate and memory bandwidth are multiplied (every
kernel runs that much faster or slower; links and the FP32 datasheet figure are kept), and
the options on that card are generated again (`card_instance`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpusolve.candidates.burst import with_bursts
from gpusolve.candidates.delivery import with_bridges
from gpusolve.candidates.network import nic_capex, rack_network, storage_kinds
from gpusolve.candidates.preferences import Key, unmeetable
from gpusolve.candidates.prepare import prepare
from gpusolve.candidates.pricing import fabric_classes, vat_factors
from gpusolve.models.catalog import PART_KINDS, Card, Catalog
from gpusolve.models.plan import SensitivityKind
from gpusolve.models.policy import WorkloadPolicy, repriced
from gpusolve.models.requirements import SCENARIO_ALL, Requirements, Scenario
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Site, Sku


@dataclass(frozen=True)
class CandidateInputs:
    """What generating the candidates again takes (efficiency, network and storage
    parameters). The rule policies hold compiled CEL programs, which do not pickle: pool
    workers get these by inheritance at fork, never through a task queue."""

    reqs: Requirements
    catalog: Catalog
    policies: dict[str, WorkloadPolicy]


def network_instance(
    base: Instance, inputs: CandidateInputs, item_id: str, factor: float
) -> Instance:
    """The plan's instance with one network or storage item's catalogue price scaled,
    priced again by the candidates stage's functions: the fabrics, each server model's
    NICs bought apart, each site's rack network and storage nodes."""
    catalog = scale_item(inputs.catalog, item_id, factor)
    goods, _ = vat_factors(inputs.reqs)
    servers = [catalog.servers[k] for k in base.skus if k in catalog.servers]
    skus = {
        k: replace(s, nic_capex=nic_capex(catalog, catalog.servers[k], goods))
        if k in catalog.servers
        else s
        for k, s in base.skus.items()
    }
    storage = storage_kinds(catalog, goods)
    sites = {
        k: replace(_rack_network(catalog, goods, s), storage=storage) for k, s in base.sites.items()
    }
    fabrics = {**base.fabrics, **fabric_classes(catalog, servers, inputs.reqs)}
    return replace(base, skus=skus, sites=sites, fabrics=fabrics)


def _rack_network(catalog: Catalog, goods: float, site: Site) -> Site:
    """`site` with the rack parts the re-priced catalogue gives its racks (another switch
    or PDU may now be the cheapest that fits), as `price_site` chooses them."""
    own = rack_network(catalog, goods, site.rack_servers, site.pdu_feed_w)
    return replace(
        site,
        rack_network_capex=own.capex,
        rack_network_w=own.power_w,
        rack_network_units=own.rack_units,
    )


def scale_item(catalog: Catalog, item_id: str, factor: float) -> Catalog:
    """`catalog` with the switch, link, NIC, storage node or PDU `item_id` at `factor` x its
    price."""
    update: dict[str, object] = {}
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
        bought = tuple(
            _owned_repriced(o, factor) if o.sku == subject else o for o in instance.owned
        )
        return replace(instance, skus=skus, owned=bought)
    if kind == "cloud_price":
        cloud: tuple[CloudOption, ...] = tuple(
            _cloud_repriced(o, factor) if o.offer == subject else o for o in instance.cloud
        )
        bursts = tuple(
            _cloud_repriced(o, factor) if o.offer == subject else o for o in instance.bursts
        )
        # A workload's rental until delivery is its cheapest rental's share, and a mixed
        # option's burst the cheapest for the rest: both chosen again at the new price.
        return with_bridges(with_bursts(replace(instance, cloud=cloud, bursts=bursts)))
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


def _cloud_repriced(option: CloudOption, factor: float) -> CloudOption:
    """A rental at `factor` x its price: its cost, and the penalties taking a share of it."""
    cost = _money(option.cost_total, factor)
    penalty = repriced(option.penalty, option.penalty_shares, option.cost_total, cost)
    return replace(option, cost_total=cost, penalty=penalty)


def _owned_repriced(option: OwnedOption, factor: float) -> OwnedOption:
    """Owned servers at `factor` x their price: the penalties taking a share of it, the
    option's own and each placement's (capex is the SKU's)."""
    old = option.penalty_base
    new = old * factor
    placements = tuple(
        replace(p, penalty=repriced(p.penalty, p.penalty_shares, old, new))
        for p in option.placements
    )
    return replace(
        option,
        penalty=repriced(option.penalty, option.penalty_shares, old, new),
        penalty_base=new,
        placements=placements,
    )


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


def card_instance(base: Instance, inputs: CandidateInputs, card_id: str, factor: float) -> Instance:
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
    # What every option misses is judged over all of a workload's options, as a full
    # generation judges it: the other cards' allowed options count too.
    outside = {
        w: [keys for card, keys in base.missed.get(w, frozenset()) if card != card_id]
        for w in base.workloads
    }
    part = prepare(
        inputs.reqs, part_catalog, inputs.policies, whole=scaled, elsewhere=outside
    ).cand.instance
    missed = {
        w: frozenset((c, k) for c, k in base.missed.get(w, frozenset()) if c != card_id)
        | part.missed.get(w, frozenset())
        for w in base.workloads
    }
    if _unmeetable(missed) != _unmeetable(base.missed):
        # The card's new options change what every option misses: the other options'
        # penalties would change too, which only their own generation knows.
        return prepare(inputs.reqs, scaled, inputs.policies).cand.instance
    workload = {w: i for i, w in enumerate(base.workloads)}
    server = {k: i for i, k in enumerate(whole.servers)}
    offer = {k: i for i, k in enumerate(whole.cloud_offers)}
    # A workload's whole-demand options come first, then its bases share by share
    # (ascending), each in catalogue order; bursts share by share too (`burst.py`).
    owned = sorted(
        [o for o in base.owned if o.sku not in mine_servers] + list(part.owned),
        key=lambda o: (
            (workload[o.workload], o.share_permille, server[o.sku])
            if o.share_permille < 1000
            else (workload[o.workload], 0, server[o.sku])
        ),
    )
    cloud = sorted(
        [c for c in base.cloud if c.offer not in mine_offers] + list(part.cloud),
        key=lambda c: (workload[c.workload], offer[c.offer]),
    )
    bursts = sorted(
        [c for c in base.bursts if c.offer not in mine_offers] + list(part.bursts),
        key=lambda c: (workload[c.workload], -c.share_permille, offer[c.offer]),
    )
    sites = {
        k: base.sites.get(k) or part.sites[k]
        for k in whole.colo_offers
        if k in base.sites or k in part.sites
    }
    skus = {k: base.skus.get(k) or part.skus[k] for k in server if k in base.skus or k in part.skus}
    merged = replace(
        base,
        owned=tuple(owned),
        cloud=tuple(cloud),
        bursts=tuple(bursts),
        sites=sites,
        skus=skus,
        requirements={**base.requirements, **part.requirements},
        fabrics={**base.fabrics, **part.fabrics},
        missed=missed,
    )
    # The part's bridges and bursts saw only the card's own rentals: the cheapest may be
    # another's.
    return with_bridges(with_bursts(merged))


def _unmeetable(
    missed: Mapping[str, frozenset[tuple[str, frozenset[Key]]]],
) -> dict[str, frozenset[Key]]:
    """Per workload, the preferences every allowed option misses."""
    return {w: unmeetable([keys for _, keys in m]) for w, m in missed.items()}


def scenario_catalog(catalog: Catalog, s: Scenario) -> Catalog:
    """The catalogue as the scenario has it: cards' achieved rates, prices, and no
    server or cloud offer of an unavailable card."""
    gone = set(s.unavailable)
    cards = {
        k: _efficient(c, s.efficiency.get(k, s.efficiency.get(SCENARIO_ALL, 1.0)))
        for k, c in catalog.cards.items()
    }
    servers = {
        k: v.model_copy(update={"price": v.price * s.prices.servers})
        for k, v in catalog.servers.items()
        if v.card not in gone
    }
    cloud = {
        k: v.model_copy(update={"price_per_hour": v.price_per_hour * s.prices.cloud})
        for k, v in catalog.cloud_offers.items()
        if v.card not in gone
    }
    colo = {
        k: v.model_copy(update={"power_price_per_kwh": v.power_price_per_kwh * s.prices.power})
        for k, v in catalog.colo_offers.items()
    }
    return catalog.model_copy(
        update={"cards": cards, "servers": servers, "cloud_offers": cloud, "colo_offers": colo}
    )


def _efficient(card: Card, factor: float) -> Card:
    """A card that achieves `factor` x what the model assumes on its kernels, scaled as
    the sensitivity analysis scales it (one meaning of "efficiency" for both)."""
    return card if factor == 1.0 else scale_card(card, factor)
