"""The priced catalogue: cards, servers, colocation offers, cloud rentals."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpusolve.models.common import (
    Confidence,
    Currency,
    Identifier,
    NonNegativeFloat,
    PositiveFloat,
    PriceNote,
    StrictModel,
)
from gpusolve.models.periods import AvailableFromMonth, ItemPriceTrend, PriceTrend

Cooling = Literal["air", "enhanced_air", "liquid"]
FabricKind = Literal["infiniband", "roce", "ethernet", "none"]
PeerLink = Literal["nvlink", "nvlink_bridge", "infinity_fabric", "hccs", "pcie", "none"]
FormFactor = Literal["sxm", "oam", "pcie", "consumer"]
GpuTopology = Literal["nvswitch", "full_mesh", "nvlink_bridge_pairs", "pcie_switch", "pcie"]
Architecture = Literal[
    "ampere",
    "hopper",
    "blackwell",
    "blackwell_geforce",
    "ada",
    "cdna3",
    "ascend",
    "mlu",
    "dcu",
    "xpu",
]

# Range checks where catalogue figures enter. Prices: a price above 1e12 of the
# run's currency (a trillion yuan, ~100x the capex of the largest announced AI cluster) is
# a pasting error, and below it every cost, once multiplied by counts and months, stays
# inside CP-SAT's int64 coefficients (`optimize/guard.py` checks the products).
MAX_PRICE = 1e12
MAX_HOURLY_PRICE = 1e9
MAX_ENERGY_PRICE = 1e4  # per kWh; real tariffs are ~0.3-2 CNY
MAX_MEMORY_GB = 1e6  # per card; the largest shipping card has ~300 GB
MAX_BANDWIDTH_GBS = 1e7  # GB/s; HBM3e is ~8,000
MAX_TFLOPS = 1e7  # per card; B200 dense FP8 is ~4,500
MAX_POWER_W = 1e6  # per card
MAX_POWER_KW = 1e5  # per server or rack: a data hall; a W-for-kW slip gets its own message
MAX_COUNT = 100_000  # racks, instances, NICs, cores
MAX_NIC_GBPS = 1e6
MAX_INTERNET_MBPS = 1e8


class Tflops(StrictModel):
    """Dense tensor throughput per precision (never the sparsity figure). Null = unsupported."""

    fp32: PositiveFloat = Field(le=MAX_TFLOPS, description="Non-tensor FP32 TFLOPS.")
    tf32: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    bf16: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    fp16: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    fp8: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    int8: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS, description="Dense INT8 TOPS.")


class Mamf(StrictModel):
    """Maximum achievable matmul TFLOPS measured on this card (best shape of a sweep)."""

    bf16: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    fp8: PositiveFloat | None = Field(default=None, le=MAX_TFLOPS)
    source: str = Field(min_length=3)


ExportState = Literal["restricted", "licence-required", "licensed", "not-restricted", "unknown"]
"""restricted: no licence expected; licence-required: sale needs a US licence case by case;
licensed: a licence is required and the seller reports holding one (e.g. the H20 after
2025-07), so a buyer in China can order it through the seller's channel; not-restricted:
below every threshold as of `as_of`; unknown: nobody checked."""

RESTRICTED_STATES: frozenset[str] = frozenset({"restricted", "licence-required"})


class ExportStatus(StrictModel):
    """A card's export status for China, dated and sourced: the rules change."""

    status: ExportState
    rule: str = Field(min_length=3, description="The rule that decides it, e.g. the BIS IFR.")
    source: str = Field(min_length=3, description="URL or document of the rule or the news.")
    as_of: str = Field(
        pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="Date the status was last checked."
    )
    note: str | None = None

    @property
    def restricted(self) -> bool:
        """True when buying the card for use in China needs a licence the buyer lacks."""
        return self.status in RESTRICTED_STATES


DATE_PATTERN = r"^\d{4}-\d{2}(-\d{2})?$"


class SpecRange(StrictModel):
    """The range a figure's sources give where they differ (or an estimate's stated bounds):
    the figure used must lie inside it. `field` is the figure's path on the item."""

    field: str = Field(
        pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)?$",
        description="Path of the figure on the item: memory_bandwidth_gbs, tflops.bf16, ...",
    )
    low: NonNegativeFloat
    high: NonNegativeFloat
    source: str = Field(min_length=3, description="The sources and what each says.")
    as_of: str = Field(pattern=DATE_PATTERN, description="Date the sources were read.")


# A card's or server's sources: when they were read, and the range each figure may take
# where they differ or it is an estimate.
AsOf = Annotated[
    str | None, Field(pattern=DATE_PATTERN, description="Date the figures' sources were read.")
]
SpecRanges = Annotated[
    tuple[SpecRange, ...],
    Field(
        description="Per figure where sources differ or it is estimated: the range they give; "
        "the figure used must lie inside it (checked on load and by `catalog validate`)."
    ),
]


class PriceRange(StrictModel):
    """The range of prices seen or estimated for an item; `price` is the point inside it the
    plan uses. Its date and label are the item's `pricing` (as_of, illustrative)."""

    low: PositiveFloat = Field(le=MAX_PRICE)
    high: PositiveFloat = Field(le=MAX_PRICE)


def figure_at(item: BaseModel, path: str) -> float | None:
    """The number at a dotted path on a catalogue item (`tflops.bf16`), None when unset."""
    value: object = item
    for part in path.split("."):
        value = getattr(value, part, None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check_spec_ranges(item: BaseModel, ranges: tuple[SpecRange, ...]) -> None:
    """Every ranged figure exists and lies within the range its sources give."""
    for r in ranges:
        if r.low > r.high:
            raise ValueError(f"spec_ranges {r.field}: low {r.low:g} is above high {r.high:g}")
        value = figure_at(item, r.field)
        if value is None:
            raise ValueError(f"spec_ranges names {r.field!r}, which is not a figure of this item")
        if not r.low <= value <= r.high:
            raise ValueError(
                f"{r.field} {value:g} is outside the range {r.low:g}-{r.high:g} its sources "
                f"give ({r.source}); correct the figure or the range"
            )


class Card(StrictModel):
    id: Identifier
    name: str
    vendor: str
    architecture: Architecture | None = Field(
        default=None,
        description="Card family for achievable efficiency (GEMM, attention, memory, "
        "collective library); derived from vendor and id when absent.",
    )
    memory_gb: PositiveFloat = Field(
        le=MAX_MEMORY_GB,
        description="Marketed device memory ('80 GB'); see memory_reported_mib for what "
        "the device exposes.",
    )
    memory_reported_mib: PositiveFloat | None = Field(
        default=None,
        description="Total memory the device reports (nvidia-smi / rocm-smi), MiB. When "
        "absent, 'N GB' is read as N GiB, less 1/16 for ECC on a datacentre GDDR board.",
    )
    memory_source: str | None = Field(
        default=None, description="Where memory_reported_mib comes from."
    )
    mamf_tflops: Mamf | None = Field(
        default=None,
        description="Measured maximum achievable matmul TFLOPS; else the family's ratio.",
    )
    memory_type: str
    memory_bandwidth_gbs: PositiveFloat = Field(
        le=MAX_BANDWIDTH_GBS, description="Memory bandwidth, GB/s."
    )
    tflops: Tflops
    tdp_w: PositiveFloat = Field(le=MAX_POWER_W)
    peer_link: PeerLink = Field(description="GPU-to-GPU link the card supports.")
    peer_bandwidth_gbs: NonNegativeFloat = Field(
        le=MAX_BANDWIDTH_GBS,
        description="GPU-to-GPU bandwidth per GPU, bidirectional GB/s (0 = PCIe only).",
    )
    pcie_gen: int = Field(ge=3, le=6)
    form_factor: FormFactor
    export_variant: bool = Field(
        default=False, description="A China export-compliant variant (A800, H800, H20, L20...)."
    )
    export_cn: ExportStatus | None = Field(
        default=None,
        description="Export status for China (mainland, Hong Kong, Macau): the status, the "
        "rule, its source and the date it was checked. Absent = not stated (treated as "
        "unknown). A policy-risk fact, not legal advice: patch it to your legal team's view.",
    )
    available_from_month: AvailableFromMonth = 0
    price_trend: ItemPriceTrend = None
    confidence: Confidence
    source: str = Field(min_length=3)
    as_of: AsOf = None
    spec_ranges: SpecRanges = ()
    notes: str | None = None

    @model_validator(mode="after")
    def _figures_in_their_ranges(self) -> Card:
        check_spec_ranges(self, self.spec_ranges)
        return self

    @model_validator(mode="after")
    def _reported_memory_matches(self) -> Card:
        if self.memory_reported_mib is not None:
            ratio = self.memory_reported_mib / (self.memory_gb * 1024)
            if not 0.85 <= ratio <= 1.1:
                raise ValueError(
                    f"memory_reported_mib {self.memory_reported_mib:g} MiB does not match "
                    f"memory_gb {self.memory_gb:g} (expected about {self.memory_gb * 1024:,.0f} "
                    "MiB); update or remove memory_reported_mib"
                )
        return self

    @property
    def reported_memory_bytes(self) -> float:
        """Bytes the device exposes: the reported MiB, else the marketed GB read as GiB
        (memory parts are binary-sized: an "80 GB" H100 reports 81,559 MiB), less the 1/16
        that ECC takes on a datacentre GDDR board (L40S: 49,140 MiB off, 46,068 MiB on)."""
        if self.memory_reported_mib is not None:
            return self.memory_reported_mib * 2**20
        gib = self.memory_gb * 2**30
        gddr_with_ecc = "GDDR" in self.memory_type.upper() and self.form_factor != "consumer"
        return gib * (1 - 1 / 16) if gddr_with_ecc else gib

    def tflops_at(self, precision: str) -> float | None:
        """Peak dense TFLOPS at a precision, falling back to the next wider format."""
        order = {
            "fp8": ["fp8", "bf16", "fp16"],
            "bf16": ["bf16", "fp16"],
            "fp16": ["fp16", "bf16"],
            "tf32": ["tf32", "fp32"],
            "fp32": ["fp32"],
            "int8": ["int8", "fp8", "fp16", "bf16"],
            "int4": ["int8", "fp8", "fp16", "bf16"],
        }.get(precision, [precision])
        for key in order:
            value = getattr(self.tflops, key, None)
            if value is not None:
                return float(value)
        return None


class Cpu(StrictModel):
    model: str
    sockets: int = Field(ge=1, le=8)
    cores_total: int = Field(ge=1, le=MAX_COUNT)
    pcie_lanes: int = Field(ge=1, le=MAX_COUNT, description="CPU PCIe lanes available.")
    base_ghz: PositiveFloat = Field(le=100)


class Fabric(StrictModel):
    kind: FabricKind
    nics: int = Field(ge=0, le=MAX_COUNT, description="Compute-fabric NICs per server.")
    nic_gbps: NonNegativeFloat = Field(le=MAX_NIC_GBPS, description="Line rate per NIC, Gbit/s.")
    nics_included: bool = Field(
        default=True,
        description="The server's price includes these NICs; false: the plan buys them "
        "(catalogue `nics`).",
    )

    @property
    def total_gbps(self) -> float:
        return self.nics * self.nic_gbps


class Server(StrictModel):
    id: Identifier
    name: str
    card: Identifier
    gpus: int = Field(ge=1, le=16)
    topology: GpuTopology
    peer_bandwidth_gbs: NonNegativeFloat = Field(
        le=MAX_BANDWIDTH_GBS,
        description="GPU-to-GPU bandwidth per GPU inside this server, bidirectional GB/s.",
    )
    cpu: Cpu
    ram_gb: PositiveFloat = Field(le=1e8)
    fabric: Fabric
    storage_write_gbs: PositiveFloat = Field(
        le=MAX_BANDWIDTH_GBS, description="Local checkpoint storage write, GB/s."
    )
    power_kw: PositiveFloat = Field(le=MAX_POWER_KW, description="Peak wall power, kW.")
    idle_power_kw: NonNegativeFloat | None = Field(
        default=None,
        le=MAX_POWER_KW,
        description="Wall power with no work running, kW (source in `source`); default: a "
        "documented fraction of peak (optimize/finance.py).",
    )
    rack_units: int = Field(ge=1, le=20)
    cooling: list[Cooling] = Field(
        min_length=1, description="Rack cooling types this server can live in."
    )
    price: PositiveFloat = Field(le=MAX_PRICE, description="Purchase price, catalogue currency.")
    pricing: PriceNote
    price_range: PriceRange | None = Field(
        default=None,
        description="Low and high purchase price seen or estimated; `price` lies inside it. "
        "Dated and labelled by `pricing`.",
    )
    confidence: Confidence
    source: str = Field(min_length=3)
    as_of: AsOf = None
    spec_ranges: SpecRanges = ()
    notes: str | None = None
    available_from_month: AvailableFromMonth = 0
    price_trend: ItemPriceTrend = None
    lead_time_weeks: float = Field(
        default=0,
        ge=0,
        le=104,
        description="Weeks from order to a working server. A plan's workloads on it rent "
        "their cheapest rental until delivery; a schedule's purchase works in its period "
        "when delivered within it (renting until then), else from the first period that "
        "starts after delivery.",
    )
    lead_time_source: str | None = Field(
        default=None,
        min_length=3,
        description="Where lead_time_weeks comes from (a report and its date, or "
        "'estimate: ...' per vendor channel); required when it is above 0.",
    )

    @model_validator(mode="after")
    def _lead_time_has_a_source(self) -> Server:
        if self.lead_time_weeks > 0 and self.lead_time_source is None:
            raise ValueError(
                "lead_time_weeks needs lead_time_source (a report, or 'estimate: ...')"
            )
        return self

    @model_validator(mode="after")
    def _figures_in_their_ranges(self) -> Server:
        check_spec_ranges(self, self.spec_ranges)
        r = self.price_range
        if r is not None and not r.low <= self.price <= r.high:
            raise ValueError(
                f"price {self.price:,.0f} is outside its price_range {r.low:,.0f}-{r.high:,.0f}; "
                "correct the price or the range (for a quote, patch price_range too, or set "
                "it to null)"
            )
        return self


class ColoOffer(StrictModel):
    id: Identifier
    provider: str
    region: str = Field(description="Region id, e.g. jiangsu-south; aliases such as 苏南 accepted.")
    city: str
    cooling: Cooling
    rack_kw: PositiveFloat = Field(le=MAX_POWER_KW, description="Contracted power per rack, kW.")
    rack_units: int = Field(ge=4, le=60)
    racks_available: int = Field(ge=0, le=MAX_COUNT)
    rack_price_per_month: NonNegativeFloat = Field(le=MAX_PRICE)
    power_included: bool = Field(
        default=False, description="Energy is bundled into the rack price (no metered bill)."
    )
    power_price_per_kwh: NonNegativeFloat = Field(le=MAX_ENERGY_PRICE)
    pue: float = Field(ge=1.0, le=3.0)
    bandwidth_mbps: NonNegativeFloat = Field(
        le=MAX_INTERNET_MBPS, description="Internet bandwidth included per site."
    )
    bandwidth_price_per_mbps_month: NonNegativeFloat = Field(default=0.0, le=MAX_PRICE)
    bgp: bool
    bgp_lines: int = Field(default=0, ge=0, le=MAX_COUNT)
    fabric: FabricKind = Field(description="Inter-server fabric the site can provide.")
    fabric_gbps: NonNegativeFloat = Field(
        default=0.0, le=MAX_NIC_GBPS, description="Per-port fabric rate, Gbit/s."
    )
    fabric_oversubscription: float = Field(
        default=1.0,
        ge=1.0,
        le=64.0,
        description="Spine oversubscription of the site's fabric (1 = non-blocking fat tree; "
        "2 = half the bisection bandwidth). Divides what crosses the spine.",
    )
    fabric_max_nodes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_COUNT,
        description="Most servers one fabric connects (switch ports); default: every rack.",
    )
    usable_kw: PositiveFloat | None = Field(
        default=None,
        le=MAX_POWER_KW,
        description="Continuous draw per rack the offer allows, kW, when it states one; "
        "default: rack_kw x the rule parameter rack_load_fraction (0.8).",
    )
    reserved_units: int | None = Field(
        default=None,
        ge=0,
        le=20,
        description="Rack units per rack the offer keeps free of servers (switches, PDUs); "
        "default: the rule parameter rack_reserved_units (4).",
    )
    pdus_included: bool = Field(
        default=True,
        description="The rack comes with its power distribution units (a Chinese IDC rack "
        "lease normally includes the A+B feed PDUs). false: each rack buys a pair, one per "
        "feed, from the catalogue's `pdus`.",
    )
    ops_24h: bool
    dual_power: bool
    certifications: list[str] = Field(default_factory=list)
    licences: list[str] = Field(default_factory=list)
    latency_ms_to_shanghai: NonNegativeFloat | None = Field(default=None, le=1e5)
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None
    min_term_months: int | None = Field(
        default=None,
        ge=1,
        le=240,
        description="Shortest contract: racks are rented for at least this many months even "
        "when the horizon is shorter.",
    )
    setup_fee: NonNegativeFloat = Field(
        default=0.0, le=MAX_PRICE, description="One-off fee when the site is used at all."
    )
    power_pricing: PriceNote | None = Field(
        default=None,
        description="Where power_price_per_kwh and pue come from, when not the rack price's "
        "source (`pricing`): the energy lines of a plan cite it.",
    )
    bandwidth_pricing: PriceNote | None = Field(
        default=None,
        description="Where bandwidth_mbps and bandwidth_price_per_mbps_month come from, when "
        "not the rack price's source: the bandwidth lines of a plan cite it.",
    )

    @model_validator(mode="after")
    def _reserve_inside_rack(self) -> ColoOffer:
        if self.usable_kw is not None and self.usable_kw > self.rack_kw:
            raise ValueError(
                f"usable_kw {self.usable_kw:g} is above rack_kw {self.rack_kw:g}; give the "
                "continuous draw the contract allows, at most the contracted kW"
            )
        if self.reserved_units is not None and self.reserved_units >= self.rack_units:
            raise ValueError(
                f"reserved_units {self.reserved_units} leaves no room in a "
                f"{self.rack_units}U rack; give the units kept free of servers"
            )
        return self


class ReservedPrice(StrictModel):
    """A reserved (committed) rental term: paid per month for whole terms."""

    term_months: int = Field(ge=1, le=120, description="Commitment, months (12, 36, ...).")
    price_per_month: PositiveFloat = Field(
        le=MAX_PRICE, description="Per instance-month over the term, catalogue currency."
    )


class CloudOffer(StrictModel):
    id: Identifier
    provider: str
    card: Identifier
    gpus_per_instance: int = Field(ge=1, le=16)
    price_per_hour: PositiveFloat = Field(
        le=MAX_HOURLY_PRICE, description="Per instance-hour, catalogue currency."
    )
    region: str
    fabric: FabricKind = "ethernet"
    fabric_gbps: NonNegativeFloat = Field(
        default=0.0, le=MAX_NIC_GBPS, description="Line rate of one fabric NIC, Gbit/s."
    )
    fabric_nics: int | None = Field(
        default=None,
        ge=0,
        le=MAX_COUNT,
        description="Fabric NICs per instance (default: one per GPU, as 8-GPU cloud nodes have).",
    )
    peer_bandwidth_gbs: NonNegativeFloat = Field(
        default=0.0,
        le=MAX_BANDWIDTH_GBS,
        description="GPU-to-GPU bandwidth per GPU inside one instance.",
    )
    max_instances: int = Field(default=64, ge=1, le=MAX_COUNT)
    storage_write_gbs: PositiveFloat = Field(default=1.0, le=MAX_BANDWIDTH_GBS)
    price_trend: PriceTrend | None = Field(
        default=None,
        description="With `periods`: how its rental price moves per year, with a source.",
    )
    pricing: PriceNote
    source: str = Field(min_length=3)
    price_per_month: PositiveFloat | None = Field(
        default=None,
        le=MAX_PRICE,
        description="Monthly rental per instance (held whole months), catalogue currency.",
    )
    reserved: list[ReservedPrice] = Field(
        default_factory=list,
        description="Reserved terms (1-, 3-year ...): each option takes the cheapest tier "
        "its use allows.",
    )
    notes: str | None = None


class StorageNode(StrictModel):
    """A building block of a site's shared checkpoint and dataset storage (an all-flash
    parallel-filesystem node): bought by the node, sized by usable capacity."""

    id: Identifier
    name: str
    vendor: str
    capacity_tb: PositiveFloat = Field(le=1e6, description="Usable capacity, TB (10^12 B).")
    write_gbs: PositiveFloat = Field(le=MAX_BANDWIDTH_GBS, description="Sustained write, GB/s.")
    power_w: PositiveFloat = Field(le=MAX_POWER_W)
    rack_units: int = Field(ge=1, le=20)
    price: PositiveFloat = Field(le=MAX_PRICE)
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None


NetworkFabric = Literal["infiniband", "ethernet"]
SwitchRole = Literal["fabric", "tor", "management"]


class NetworkSwitch(StrictModel):
    """A switch: a compute-fabric leaf/spine (`fabric`), a rack's front-end ToR (`tor`) or
    its out-of-band management switch for the servers' BMC ports (`management`)."""

    id: Identifier
    name: str
    vendor: str
    fabric: NetworkFabric = Field(description="infiniband, or ethernet (RoCE runs on it).")
    role: SwitchRole
    ports: int = Field(ge=1, le=4096, description="Physical ports.")
    port_gbps: PositiveFloat = Field(le=MAX_NIC_GBPS, description="Line rate per port, Gbit/s.")
    breakout: int = Field(
        default=1,
        ge=1,
        le=8,
        description="Logical ports one physical port splits into (twin-port OSFP: 2), each "
        "at port_gbps / breakout.",
    )
    uplinks: int = Field(
        default=0,
        ge=0,
        le=64,
        description="ToR and management: uplink ports cabled to the site's network.",
    )
    uplink_gbps: PositiveFloat | None = Field(
        default=None,
        le=MAX_NIC_GBPS,
        description="Rate of an uplink port, Gbit/s: its cable is the cheapest link at least "
        "this fast; default: the cheapest link of any rate.",
    )
    power_w: PositiveFloat = Field(le=MAX_POWER_W, description="Typical draw with optics, W.")
    rack_units: int = Field(ge=1, le=20)
    price: PositiveFloat = Field(le=MAX_PRICE)
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None

    def ports_at(self, gbps: float) -> int:
        """Logical ports at a NIC rate: split where the port is at least twice as fast."""
        if gbps > self.port_gbps:
            return 0
        split = 1
        while split * 2 <= self.breakout and self.port_gbps / (split * 2) >= gbps:
            split *= 2
        return self.ports * split


class NetworkNic(StrictModel):
    """A fabric NIC bought separately (most GPU servers ship with theirs)."""

    id: Identifier
    name: str
    vendor: str
    fabric: list[NetworkFabric] = Field(min_length=1)
    gbps: PositiveFloat = Field(le=MAX_NIC_GBPS)
    power_w: PositiveFloat = Field(le=MAX_POWER_W)
    price: PositiveFloat = Field(le=MAX_PRICE)
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None


class NetworkLink(StrictModel):
    """Everything one port-to-port link needs: two transceivers and a fibre, or one
    DAC/AOC cable. Priced and powered per link."""

    id: Identifier
    name: str
    kind: Literal["optical", "dac", "aoc"]
    gbps: PositiveFloat = Field(le=MAX_NIC_GBPS, description="Rate of the link, Gbit/s.")
    nic_to_nic: bool = Field(
        default=False,
        description="Both ends plug into server NICs: two servers cabled back-to-back, no "
        "switch (a plan uses it only for a fabric of two servers).",
    )
    parts: str = Field(min_length=3, description="What one link is made of.")
    power_w: NonNegativeFloat = Field(le=MAX_POWER_W, description="Both ends, W.")
    price: PositiveFloat = Field(le=MAX_PRICE, description="Per link.")
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None


class RackPdu(StrictModel):
    """A rack power distribution unit, bought only where a colo offer's rent does not
    include the rack's PDUs (`pdus_included: false`): one per feed (A and B), each able to
    carry the whole rack alone when the other feed fails."""

    id: Identifier
    name: str
    vendor: str
    capacity_kw: PositiveFloat = Field(le=MAX_POWER_KW, description="Most it delivers, kW.")
    outlets: int = Field(ge=1, le=1000)
    power_w: NonNegativeFloat = Field(le=MAX_POWER_W, description="Its own draw (metering), W.")
    rack_units: int = Field(ge=0, le=4, description="0: a vertical (zero-U) strip.")
    price: PositiveFloat = Field(le=MAX_PRICE)
    pricing: PriceNote
    source: str = Field(min_length=3)
    notes: str | None = None


class ItemPatch(BaseModel):
    """Changes to an item defined earlier (this or an earlier file), found by its id.

    Only the fields given change; a mapping (e.g. `pricing`, `tflops`) merges key by key, a
    list or a plain value replaces the old one, null clears an optional field. The patched
    item is checked again as a whole, so a patch cannot leave it invalid.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    id: Identifier = Field(description="Id of the card, server, colo or cloud offer to change.")


class CatalogFile(StrictModel):
    """One catalogue file as written. Several files merge into one Catalog."""

    schema_: str | None = Field(default=None, alias="$schema")
    currency: Currency = "CNY"
    replace: bool = Field(
        default=False, description="Items in this file may replace earlier items with the same id."
    )
    cards: list[Card] = Field(default_factory=list)
    servers: list[Server] = Field(default_factory=list)
    colo_offers: list[ColoOffer] = Field(default_factory=list)
    cloud_offers: list[CloudOffer] = Field(default_factory=list)
    switches: list[NetworkSwitch] = Field(default_factory=list)
    nics: list[NetworkNic] = Field(default_factory=list)
    links: list[NetworkLink] = Field(default_factory=list)
    storage: list[StorageNode] = Field(default_factory=list)
    pdus: list[RackPdu] = Field(default_factory=list)
    patch: list[ItemPatch] = Field(
        default_factory=list,
        description="Field changes to items defined earlier, by id (e.g. a quoted price).",
    )

    @model_validator(mode="after")
    def _not_empty(self) -> CatalogFile:
        network = self.switches or self.nics or self.links or self.storage or self.pdus
        if (
            not (self.cards or self.servers or self.colo_offers or self.cloud_offers or network)
            and not self.patch
        ):
            raise ValueError(
                "a catalogue file needs at least one of cards, servers, colo_offers, "
                "cloud_offers, switches, nics, links, storage, pdus, patch"
            )
        return self


# The catalogue's priced parts of a site (beside servers): bought as goods, each with its
# own `price` and `pricing`.
PART_KINDS = ("switches", "nics", "links", "storage", "pdus")


class Catalog(StrictModel):
    """The merged catalogue used by a run."""

    currency: Currency = "CNY"
    cards: dict[str, Card] = Field(default_factory=dict)
    servers: dict[str, Server] = Field(default_factory=dict)
    colo_offers: dict[str, ColoOffer] = Field(default_factory=dict)
    cloud_offers: dict[str, CloudOffer] = Field(default_factory=dict)
    switches: dict[str, NetworkSwitch] = Field(default_factory=dict)
    nics: dict[str, NetworkNic] = Field(default_factory=dict)
    links: dict[str, NetworkLink] = Field(default_factory=dict)
    storage: dict[str, StorageNode] = Field(default_factory=dict)
    pdus: dict[str, RackPdu] = Field(default_factory=dict)
