"""Seeded generator of realistic optimiser instances (`gpusolve.optimize.ir.Instance`).

Cards are the shipped catalogue's real cards (memory, TDP, dense BF16 TFLOPS, memory
bandwidth, form factor); servers, colocation offers, cloud offers and workloads are
generated around them with the magnitudes of the shipped catalogue:

* servers: 1-8 cards, 1-14 kW, 2-10 U, 0.1-3 M CNY, cooling by power, fabric by form;
* sites: 4.4-50 kW racks of 42 U, air / enhanced air / liquid, 2-40 racks available,
  rent 2-40 k CNY a month, energy per server-month = kW x 0.7 x PUE x 730 x price/kWh,
  a fixed bandwidth cost once a site is used, an inter-node fabric;
* workloads: pretraining and full fine-tunes (multi-node over InfiniBand/RoCE), LoRA
  (the frozen model within one server, mostly at night), inference services (by day or
  always, replicas); each has 1-3 server-count variants per SKU that fits it (including a night-only
  variant of a training job, which may share the servers of a day service);
* cloud options priced per hour over the horizon, capped by instances available;
* a capex cap below what owning everything would cost and a monthly cap that the
  all-cloud plan meets, so every instance is feasible and the caps can bind.

Everything is drawn from `random.Random(seed)`: the same (scale, seed) gives the same
instance on every machine.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import Literal

from gpusolve.optimize.ir import (
    CloudOption,
    FabricClass,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
    Slot,
    StorageKind,
)

Kind = Literal["pretrain", "full_finetune", "lora", "inference"]
Fabric = Literal["infiniband", "roce", "ethernet"]

HOURS_PER_MONTH = 730
REGIONS = ("jiangsu-south", "jiangsu-north", "shanghai", "zhejiang")
LATENCY_REGIONS = frozenset({"jiangsu-south", "shanghai"})
MAX_SERVERS = 64  # a candidate needing more servers than this is not offered
HEADROOM = 0.8  # usable share of card memory (20% headroom, H29)

# The network and storage of the shipped catalogue (catalog/network.yaml, storage.yaml),
# as the candidates stage turns them into the IR: a fabric class per NIC kind and rate,
# one ToR + 2 uplinks per rack, storage nodes; racks keep 20% of their kW and 4U in reserve
# (rules rack_load_fraction, rack_reserved_units).
FABRICS: dict[str, FabricClass] = {
    "infiniband-400g": FabricClass(
        "infiniband-400g", "qm9700-ndr-64x400g", "osfp-400g-optical", 64, 32, 300_000, 1100, 1, 9000
    ),
    "infiniband-200g": FabricClass(
        "infiniband-200g",
        "qm8700-hdr-40x200g",
        "qsfp56-200g-optical",
        40,
        20,
        130_000,
        600,
        1,
        4000,
    ),
    "roce-400g": FabricClass(
        "roce-400g", "sn5600-800g-64p", "osfp-400g-optical", 128, 64, 450_000, 2000, 2, 9000
    ),
    "roce-200g": FabricClass(
        "roce-200g", "sn5600-800g-64p", "qsfp56-200g-optical", 256, 128, 450_000, 2000, 2, 4000
    ),
}
STORAGE = (
    StorageKind("nvme-allflash-node-120tb", 120_000, 860_000, 1200, 2),
    StorageKind("nvme-storage-server-15tb", 15_000, 90_000, 500, 1),
)
TOR_CAPEX, TOR_W, TOR_UNITS = 60_000 + 2 * 600, 250, 1
LOAD_FRACTION, RESERVED_UNITS = 0.8, 4
CHECKPOINT_BYTES_PER_PARAM, CHECKPOINTS_KEPT = 14, 3  # bf16 AdamW (H16), 3 kept


@dataclass(frozen=True)
class Scale:
    name: str
    workloads: int
    skus: int
    sites: int


SCALES: dict[str, Scale] = {
    "S": Scale("S", 3, 10, 5),
    "M": Scale("M", 10, 30, 10),
    "L": Scale("L", 20, 60, 20),
    "XL": Scale("XL", 40, 120, 40),
}


# --------------------------------------------------------------------------- cards


@dataclass(frozen=True)
class Card:
    """What the generator uses of a catalogue card."""

    id: str
    memory_gb: float
    tdp_w: float
    bf16_tflops: float
    bandwidth_gbs: float
    form: str  # sxm | oam | pcie | consumer
    price: float  # per card, CNY (from shipped servers when the card is in one)


@functools.cache
def load_cards() -> tuple[Card, ...]:
    """The shipped catalogue's cards, priced from the shipped servers that carry them."""
    from gpusolve.load import load_catalog

    catalog = load_catalog().catalog
    per_card: dict[str, list[float]] = {}
    for server in catalog.servers.values():
        per_card.setdefault(server.card, []).append(server.price / server.gpus)
    cards: list[Card] = []
    for card in sorted(catalog.cards.values(), key=lambda c: c.id):
        bf16 = card.tflops.bf16 or card.tflops.fp16 or 0.0
        if bf16 <= 0:
            continue
        prices = per_card.get(card.id)
        price = sum(prices) / len(prices) if prices else 150.0 * bf16 + 1000.0 * card.memory_gb
        cards.append(
            Card(
                card.id,
                card.memory_gb,
                card.tdp_w,
                bf16,
                card.memory_bandwidth_gbs,
                card.form_factor,
                price,
            )
        )
    return tuple(cards)


# --------------------------------------------------------------------------- servers


@dataclass(frozen=True)
class ServerSpec:
    sku: Sku
    card: Card
    gpus: int
    fabric: Fabric


def _server_gpus(rng: random.Random, card: Card) -> int:
    if card.form in ("sxm", "oam"):
        return rng.choice((8, 8, 8, 4))
    if card.form == "consumer":
        return rng.choice((2, 4, 8))
    return rng.choice((2, 4, 8, 8))


def _server_units(rng: random.Random, gpus: int, power_w: int, liquid: bool) -> int:
    if liquid:
        return 4
    if gpus <= 2:
        return 2
    if gpus == 4:
        return rng.choice((2, 4)) if power_w < 4000 else 4
    return 10 if power_w > 12000 else rng.choice((4, 6, 8)) if power_w < 9000 else 8


def _server_fabric(rng: random.Random, card: Card) -> Fabric:
    if card.form in ("sxm", "oam"):
        return "infiniband" if rng.random() < 0.7 else "roce"
    if card.form == "pcie" and rng.random() < 0.25:
        return "roce"
    return "ethernet"


def make_server(rng: random.Random, index: int, card: Card) -> ServerSpec:
    gpus = _server_gpus(rng, card)
    raw_w = gpus * card.tdp_w * rng.uniform(1.1, 1.3) + rng.uniform(600, 1800)
    power_w = int(min(max(round(raw_w, -2), 1000), 14000))
    liquid = power_w >= 9000 and rng.random() < 0.2
    if liquid:
        power_w = int(round(power_w * 0.93, -2))
        cooling = frozenset({"liquid"})
    elif power_w >= 9000:
        cooling = frozenset({"enhanced_air", "liquid"})
    else:
        cooling = frozenset({"air", "enhanced_air", "liquid"})
    units = _server_units(rng, gpus, power_w, liquid)
    chassis = rng.uniform(40_000, 150_000)
    capex = gpus * card.price * rng.uniform(0.9, 1.15) + chassis
    capex = min(max(capex, 100_000), 3_000_000)
    fabric = _server_fabric(rng, card)
    # One NIC per GPU (rail-optimised reference designs); 400G on SXM/OAM, else 200G.
    rate = "400g" if card.form in ("sxm", "oam") else "200g"
    sku = Sku(
        id=f"sku{index:03d}-{card.id}-{gpus}g",
        capex=int(round(capex, -3)),
        power_w=power_w,
        rack_units=units,
        cooling=cooling,
        fabric=f"{fabric}-{rate}" if fabric != "ethernet" else None,
        nics=gpus if fabric != "ethernet" else 0,
    )
    return ServerSpec(sku, card, gpus, fabric)


# --------------------------------------------------------------------------- sites


@dataclass(frozen=True)
class SiteSpec:
    site: Site
    fabric: Fabric


_COOLING_KW: dict[str, tuple[float, ...]] = {
    "air": (4.4, 5.5, 6.6, 8.0, 8.8),
    "enhanced_air": (12.0, 15.0, 18.0, 20.0, 21.0, 25.0),
    "liquid": (30.0, 35.0, 40.0, 45.0, 50.0),
}
_COOLING_PUE: dict[str, tuple[float, float]] = {
    "air": (1.3, 1.5),
    "enhanced_air": (1.25, 1.4),
    "liquid": (1.1, 1.25),
}
_COOLING_RACKS: dict[str, tuple[int, int]] = {
    "air": (10, 40),
    "enhanced_air": (4, 20),
    "liquid": (2, 10),
}


def _site_fabric(rng: random.Random, cooling: str) -> Fabric:
    if cooling == "air":
        return "roce" if rng.random() < 0.15 else "ethernet"
    if cooling == "enhanced_air":
        return rng.choice(("infiniband", "roce", "ethernet"))
    return "infiniband" if rng.random() < 0.7 else "ethernet"


def make_site(rng: random.Random, index: int, skus: list[Sku]) -> SiteSpec:
    cooling = rng.choices(("air", "enhanced_air", "liquid"), weights=(45, 35, 20))[0]
    region = rng.choice(REGIONS)
    rack_kw = rng.choice(_COOLING_KW[cooling])
    north = 0.7 if region == "jiangsu-north" else 1.0
    rent = min(max(rack_kw * rng.uniform(850, 1300) * north, 2000), 40_000)
    pue = rng.uniform(*_COOLING_PUE[cooling])
    price_kwh = rng.uniform(0.55, 0.75)
    bandwidth = rng.choice((50, 100, 200, 500)) * rng.uniform(25, 80)
    site_id = f"site{index:02d}-{region}-{rack_kw:g}kw-{cooling}"
    energy = {s.id: round(s.power_w / 1000 * 0.7 * pue * HOURS_PER_MONTH * price_kwh) for s in skus}
    contracted_w = int(rack_kw * 1000)
    usable_w = int(contracted_w * LOAD_FRACTION)
    site = Site(
        id=site_id,
        region=region,
        cooling=cooling,
        rack_w=usable_w,
        rack_units=42 - RESERVED_UNITS,
        racks_available=rng.randint(*_COOLING_RACKS[cooling]),
        rack_rent_month=int(round(rent, -2)),
        bandwidth_month=int(round(bandwidth, -2)),
        energy_month=energy,
        reserved_w=contracted_w - usable_w,
        reserved_units=RESERVED_UNITS,
        rack_network_capex=TOR_CAPEX,
        rack_network_w=TOR_W,
        rack_network_units=TOR_UNITS,
        storage=STORAGE,
    )
    return SiteSpec(site, _site_fabric(rng, cooling))


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    kind: Kind
    params_b: float
    slot: Slot
    flops_per_run: float  # training: FLOPs of one run
    deadline_h: float  # training: wall-clock hours one run may take
    runs: int  # training runs over the horizon
    target_tps: float  # inference: generated tokens per second
    latency_sensitive: bool
    regions: frozenset[str]  # where it may run (owned or cloud)


_KIND_WEIGHTS: dict[Kind, int] = {"inference": 35, "lora": 20, "full_finetune": 25, "pretrain": 20}
_PARAMS: dict[Kind, tuple[float, ...]] = {
    "inference": (7, 13, 34, 70),
    "lora": (7, 13, 34, 70),
    "full_finetune": (7, 13, 34),
    "pretrain": (1.3, 7, 13, 34),
}


def _slot(rng: random.Random, kind: Kind) -> Slot:
    if kind == "inference":
        return "day" if rng.random() < 0.5 else "always"
    if kind == "lora":
        return "night" if rng.random() < 0.6 else "always"
    if kind == "full_finetune":
        return "night" if rng.random() < 0.4 else "always"
    return "night" if rng.random() < 0.15 else "always"


def make_workload(rng: random.Random, index: int, horizon_months: int) -> WorkloadSpec:
    kinds = list(_KIND_WEIGHTS)
    kind: Kind = rng.choices(kinds, weights=[_KIND_WEIGHTS[k] for k in kinds])[0]
    params_b = rng.choice(_PARAMS[kind])
    slot = _slot(rng, kind)
    flops = deadline = 0.0
    runs = 0
    tps = 0.0
    if kind == "pretrain":
        tokens = params_b * rng.uniform(10, 40) * 1e9
        flops, deadline = 6 * params_b * 1e9 * tokens, rng.uniform(240, 1440)
    elif kind == "full_finetune":
        tokens = rng.uniform(2, 30) * 1e9
        flops, deadline = 6 * params_b * 1e9 * tokens, rng.uniform(24, 168)
    elif kind == "lora":
        tokens = rng.uniform(0.02, 0.3) * 1e9
        flops, deadline = 4 * params_b * 1e9 * tokens, rng.uniform(8, 48)
    else:
        tps = rng.uniform(3000, 40000) * (13 / params_b) ** 0.5
    if kind != "inference":
        hours = horizon_months * HOURS_PER_MONTH * (0.5 if slot == "night" else 1.0)
        runs = max(1, int(rng.uniform(0.3, 0.9) * hours / deadline))
    latency = kind == "inference" and rng.random() < 0.5
    if latency:
        regions = LATENCY_REGIONS
    elif rng.random() < 0.4:
        regions = frozenset(rng.sample(REGIONS, 2))  # data residency, team location
    else:
        regions = frozenset((*REGIONS, "beijing"))
    return WorkloadSpec(
        name=f"w{index:02d}-{kind}-{params_b:g}b",
        kind=kind,
        params_b=params_b,
        slot=slot,
        flops_per_run=flops,
        deadline_h=deadline,
        runs=runs,
        target_tps=tps,
        latency_sensitive=latency,
        regions=regions,
    )


# --------------------------------------------------------------------------- sizing


@dataclass(frozen=True)
class Sizing:
    """One way to run a workload on `units` boxes of `gpus_per_unit` cards."""

    units: int
    slot: Slot
    throughput: int
    headroom_permille: int
    multi_node: bool
    run_hours: float  # hours a training run takes at this size (cloud pays only these)


def _mfu(card: Card, fabric: Fabric, multi_node: bool) -> float:
    base = {"sxm": 0.38, "oam": 0.33, "pcie": 0.28, "consumer": 0.2}.get(card.form, 0.25)
    if multi_node and fabric == "ethernet":
        base *= 0.6
    return base


def _train_memory_gb(w: WorkloadSpec) -> float:
    if w.kind == "lora":
        return w.params_b * 2 * 1.35  # frozen bf16 base + adapters + activations
    return w.params_b * 16 * 1.25  # mixed-precision AdamW states + activations


def _slot_share(slot: Slot) -> float:
    return 1.0 if slot == "always" else 0.5


def size_training(
    w: WorkloadSpec,
    card: Card,
    per_unit: int,
    fabric: Fabric,
    slot: Slot,
    extra: float,
    max_units: int = MAX_SERVERS,
) -> Sizing | None:
    """Boxes needed to fit the states in memory and finish a run by the deadline."""
    memory = _train_memory_gb(w)
    usable = card.memory_gb * HEADROOM
    gpus_mem = math.ceil(memory / usable)
    if w.kind == "lora" and gpus_mem > per_unit:
        return None
    for multi in (False, True):
        eff = card.bf16_tflops * 1e12 * _mfu(card, fabric, multi)
        hours = w.deadline_h * _slot_share(slot)
        gpus = max(gpus_mem, math.ceil(w.flops_per_run / (eff * hours * 3600)))
        gpus = math.ceil(gpus * extra)
        units = math.ceil(gpus / per_unit)
        if (units > 1) == multi:
            break
    if units > 1 and fabric == "ethernet":
        return None
    if units > max_units:
        return None
    total = units * per_unit
    tps = int(total * eff / (6 * w.params_b * 1e9))
    headroom = int(1000 * max(0.0, 1 - memory / (total * card.memory_gb)))
    run_hours = w.flops_per_run / (total * eff * 3600)
    return Sizing(units, slot, max(tps, 1), headroom, units > 1, run_hours)


def size_inference(w: WorkloadSpec, card: Card, per_unit: int, extra: int) -> Sizing | None:
    """Replicas (each within one box) for the target rate; `extra` spare boxes (N+k)."""
    need = w.params_b * 2 * 1.3
    replica = 1
    while replica * card.memory_gb * HEADROOM < need:
        replica *= 2
        if replica > per_unit:
            return None
    per_replica = replica * card.bandwidth_gbs / (w.params_b * 2) * 32 * 0.5
    replicas = math.ceil(w.target_tps / per_replica)
    per_box = per_unit // replica
    units = math.ceil(replicas / per_box) + extra
    if units > MAX_SERVERS:
        return None
    headroom = int(1000 * max(0.0, 1 - need / (replica * card.memory_gb)))
    tps = int(units * per_box * per_replica)
    return Sizing(units, w.slot, tps, headroom, False, 0.0)


def sizings(
    rng: random.Random, w: WorkloadSpec, card: Card, per_unit: int, fabric: Fabric
) -> list[Sizing]:
    """Every size the planner now keeps (`candidates/sizing.py` keeps every layout size
    that meets the deadline): the smallest, 1.5x and 2x for training (more headroom and
    throughput), one spare box for a service; and for an always-on training job sometimes
    a night-only one (twice the boxes, half the hours). The random draw that used to pick
    the larger size is still made, so the rest of the instance is what it was."""
    out: list[Sizing | None] = []
    if w.kind == "inference":
        out.append(size_inference(w, card, per_unit, 0))
        rng.random()
        out.append(size_inference(w, card, per_unit, 1))
    else:
        out.append(size_training(w, card, per_unit, fabric, w.slot, 1.0))
        rng.random()
        out.append(size_training(w, card, per_unit, fabric, w.slot, 1.5))
        out.append(size_training(w, card, per_unit, fabric, w.slot, 2.0))
        if w.slot == "always" and rng.random() < 0.5:
            out.append(size_training(w, card, per_unit, fabric, "night", 1.0))
    kept = [s for s in out if s is not None]
    unique: dict[tuple[int, str], Sizing] = {}
    for s in kept:
        unique.setdefault((s.units, s.slot), s)
    return list(unique.values())


# --------------------------------------------------------------------------- options


def _allowed_card(w: WorkloadSpec, card: Card) -> bool:
    """Consumer cards do not train big models (no peer link, small memory)."""
    return not (card.form == "consumer" and w.kind in ("pretrain", "full_finetune"))


def placements_for(
    w: WorkloadSpec, spec: ServerSpec, sizing: Sizing, sites: list[SiteSpec]
) -> tuple[Placement, ...]:
    out: list[Placement] = []
    sku = spec.sku
    for s in sites:
        site = s.site
        if site.cooling not in sku.cooling or sku.power_w > site.rack_w:
            continue
        if site.region not in w.regions:
            continue
        penalty = 0
        if sizing.multi_node:
            if s.fabric == "ethernet":
                continue  # multi-node training needs an RDMA fabric at the site
            if spec.fabric == "infiniband" and s.fabric != "infiniband":
                penalty = int(round(0.02 * sizing.units * sku.capex, -3))  # IB NICs on RoCE
        out.append(Placement(site.id, penalty=penalty))
    return tuple(out)


def _kept_gb(w: WorkloadSpec) -> int:
    """Checkpoints kept by a job across servers (H16): 3 x 14 B/param."""
    return math.ceil(CHECKPOINTS_KEPT * CHECKPOINT_BYTES_PER_PARAM * w.params_b)


def owned_options(
    rng: random.Random,
    workloads: list[WorkloadSpec],
    servers: list[ServerSpec],
    sites: list[SiteSpec],
) -> list[OwnedOption]:
    options: list[OwnedOption] = []
    for w in workloads:
        for spec in servers:
            if not _allowed_card(w, spec.card):
                continue
            penalty = 30_000 * (spec.card.form == "consumer")
            for v, sizing in enumerate(sizings(rng, w, spec.card, spec.gpus, spec.fabric)):
                placements = placements_for(w, spec, sizing, sites)
                if not placements:
                    continue
                options.append(
                    OwnedOption(
                        key=f"{w.name}|{spec.sku.id}|v{v}",
                        workload=w.name,
                        sku=spec.sku.id,
                        servers=sizing.units,
                        slot=sizing.slot,
                        placements=placements,
                        throughput=sizing.throughput,
                        headroom_permille=sizing.headroom_permille,
                        penalty=penalty * sizing.units,
                        spans=sizing.multi_node,
                        storage_gb=_kept_gb(w) if sizing.multi_node else 0,
                    )
                )
    return options


# --------------------------------------------------------------------------- cloud


@dataclass(frozen=True)
class CloudOffer:
    id: str
    card: Card
    gpus: int
    price_hour: float
    region: str
    max_instances: int
    fabric: Fabric


def make_cloud_offer(rng: random.Random, index: int, card: Card) -> CloudOffer:
    gpus = 8 if card.form in ("sxm", "oam") else rng.choice((1, 8))
    fabric: Fabric = "infiniband" if gpus == 8 and card.form != "consumer" else "ethernet"
    price = gpus * card.price / rng.uniform(11_000, 17_000)  # pays back in 1.3-2 years
    return CloudOffer(
        id=f"cloud{index:02d}-{gpus}x-{card.id}",
        card=card,
        gpus=gpus,
        price_hour=round(price, 1),
        region=rng.choice((*REGIONS, "beijing")),
        max_instances=rng.choice((4, 8, 16, 32)),
        fabric=fabric,
    )


def cloud_cost(w: WorkloadSpec, offer: CloudOffer, sizing: Sizing, horizon: int) -> int:
    if w.kind == "inference":
        hours = horizon * HOURS_PER_MONTH * _slot_share(w.slot)
    else:
        hours = sizing.run_hours * w.runs
    return round(sizing.units * offer.price_hour * hours)


def cloud_options(
    workloads: list[WorkloadSpec], offers: list[CloudOffer], horizon: int
) -> list[CloudOption]:
    options: list[CloudOption] = []
    for w in workloads:
        mine: list[CloudOption] = []
        for offer in offers:
            if offer.region not in w.regions:
                continue
            if not _allowed_card(w, offer.card):
                continue
            sizing = _cloud_sizing(w, offer)
            if sizing is None or sizing.units > offer.max_instances:
                continue
            mine.append(_cloud_option(w, offer, sizing, horizon))
            twice = _cloud_sizing(w, offer, 2.0)  # more instances for fewer hours
            if twice is not None and twice.units != sizing.units and w.kind != "inference":
                mine.append(_cloud_option(w, offer, twice, horizon, "|x2"))
        if not mine:
            mine.append(_reserved_option(w, offers, horizon))
        options += mine
    return options


def _reserved_option(w: WorkloadSpec, offers: list[CloudOffer], horizon: int) -> CloudOption:
    """A last resort so every instance is feasible: a dear reserved deal of 8-card boxes
    of the strongest data-centre card on offer, with no instance cap."""
    best = max(
        (o for o in offers if o.card.form != "consumer"),
        key=lambda o: (o.card.bf16_tflops, o.card.memory_gb, o.id),
        default=max(offers, key=lambda o: o.id),
    )
    offer = CloudOffer(
        f"{best.id}-reserved",
        best.card,
        8,
        round(best.price_hour / best.gpus * 8 * 1.5, 1),
        best.region if best.region in w.regions else min(w.regions),
        10**6,
        "infiniband",
    )
    sizing = _cloud_sizing(w, offer)
    assert sizing is not None, f"{w.name} cannot run even on {offer.id}"
    return _cloud_option(w, offer, sizing, horizon)


def _cloud_sizing(w: WorkloadSpec, offer: CloudOffer, extra: float = 1.0) -> Sizing | None:
    if w.kind == "inference":
        return size_inference(w, offer.card, offer.gpus, 0)
    return size_training(
        w, offer.card, offer.gpus, offer.fabric, "always", extra, offer.max_instances
    )


def _cloud_option(
    w: WorkloadSpec, offer: CloudOffer, sizing: Sizing, horizon: int, suffix: str = ""
) -> CloudOption:
    return CloudOption(
        key=f"{w.name}|{offer.id}{suffix}",
        workload=w.name,
        offer=offer.id,
        region=offer.region,
        instances=sizing.units,
        cost_total=cloud_cost(w, offer, sizing, horizon),
        throughput=sizing.throughput,
        headroom_permille=sizing.headroom_permille,
    )


# --------------------------------------------------------------------------- budgets


def budgets(
    instance_skus: dict[str, Sku],
    owned: list[OwnedOption],
    cloud: list[CloudOption],
    workloads: list[WorkloadSpec],
    horizon: int,
    rng: random.Random,
) -> tuple[int | None, int | None]:
    """A capex cap below owning everything at its cheapest, and a monthly cap the
    all-cloud plan meets (so a feasible plan always exists)."""
    own_min = 0
    for w in workloads:
        costs = [instance_skus[o.sku].capex * o.servers for o in owned if o.workload == w.name]
        own_min += min(costs, default=0)
    cloud_min = 0
    for w in workloads:
        cloud_min += min(c.cost_total for c in cloud if c.workload == w.name)
    capex_max = int(round(own_min * rng.uniform(0.4, 0.9), -3))
    monthly_max = math.ceil(cloud_min * rng.uniform(1.0, 1.4) / horizon / 1000) * 1000
    return capex_max, monthly_max


# --------------------------------------------------------------------------- instance


def generate(scale: Scale | str, seed: int) -> Instance:
    """A reproducible instance of the given scale."""
    if isinstance(scale, str):
        scale = SCALES[scale]
    rng = random.Random(f"gpusolve-bench/{scale.name}/{seed}")
    cards = load_cards()
    horizon = rng.choice((24, 36, 36, 48))
    servers = [make_server(rng, i, rng.choice(cards)) for i in range(scale.skus)]
    skus = [s.sku for s in servers]
    sites = [make_site(rng, i, skus) for i in range(scale.sites)]
    workloads = [make_workload(rng, i, horizon) for i in range(scale.workloads)]
    n_offers = max(3, scale.sites // 2)
    offers = [make_cloud_offer(rng, i, rng.choice(cards)) for i in range(n_offers)]
    owned = owned_options(rng, workloads, servers, sites)
    cloud = cloud_options(workloads, offers, horizon)
    sku_map = {s.id: s for s in skus}
    capex_max, monthly_max = budgets(sku_map, owned, cloud, workloads, horizon, rng)
    return Instance(
        workloads=tuple(w.name for w in workloads),
        skus=sku_map,
        sites={s.site.id: s.site for s in sites},
        owned=tuple(owned),
        cloud=tuple(cloud),
        horizon_months=horizon,
        capex_max=capex_max,
        monthly_max=monthly_max,
        objective="min-tco",
        fabrics=dict(FABRICS),
    )


def describe(instance: Instance) -> dict[str, int]:
    """Size figures of an instance, for progress lines and the JSON record."""
    slots = {o.slot for o in instance.owned}
    return {
        "workloads": len(instance.workloads),
        "skus": len(instance.skus),
        "sites": len(instance.sites),
        "owned_options": len(instance.owned),
        "placements": sum(len(o.placements) for o in instance.owned),
        "cloud_options": len(instance.cloud),
        "multi_node_options": sum(1 for o in instance.owned if o.servers > 1),
        "night_options": sum(1 for o in instance.owned if o.slot == "night"),
        "day_options": sum(1 for o in instance.owned if o.slot == "day"),
        "slot_kinds": len(slots),
    }
