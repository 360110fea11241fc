"""The optimiser's input and output: plain integers and ids, no physics, no pydantic.

Money is in whole units of the run currency (yuan for CNY), rounded half-even once per
coefficient when the candidates stage builds the instance; power in watts; space in rack
units. Keeping the IR integral is what lets CP-SAT prove optimality exactly (a float
objective silently switches CP-SAT to a floating-point objective that can misreport
OPTIMAL; see google/or-tools#3639).

Every user-level requirement is a named `Requirement`. Options and placements list the
requirement names they would violate (`violates`): in a normal solve those are simply
unavailable; in explain mode the requirement literals become assumptions, so the same
model names the smallest set of requirements that conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpusolve.optimize.tuning import Tuning

Slot = Literal["always", "day", "night"]
ObjectiveKind = Literal["min-tco", "min-capex", "min-monthly", "max-throughput"]
Status = Literal["optimal", "feasible", "infeasible", "unknown", "model_invalid"]

SLOTS_COVERED: dict[str, tuple[str, ...]] = {
    "always": ("day", "night"),
    "day": ("day",),
    "night": ("night",),
}


@dataclass(frozen=True)
class Sku:
    """A server model that can be bought."""

    id: str
    capex: int  # purchase price per server
    power_w: int  # peak wall power per server
    rack_units: int
    cooling: frozenset[str]  # rack cooling kinds it can live in
    residual: int = 0  # value per server at the end of the horizon (`finance.py`), <= capex
    fabric: str | None = None  # FabricClass id its NICs join when a job spans servers
    nics: int = 0  # compute-fabric NICs (ports) per server
    nic_capex: int = 0  # fabric NICs bought apart from the server, per server
    # False for a server model held in the inventory that the market forbids buying: the
    # stock may be used, no more bought (`inventory.py`).
    buyable: bool = True
    lead_time_days: int = 0  # from order to a working server (`candidates/delivery.py`)


@dataclass(frozen=True)
class Site:
    """A colocation offer: identical racks at one site."""

    id: str
    region: str
    cooling: str
    rack_w: int  # contracted power per rack
    rack_units: int
    racks_available: int
    rack_rent_month: int  # per rack
    bandwidth_month: int  # fixed monthly cost once the site is used at all
    # sku id -> per server-month at idle power (every owned server draws it all the time);
    # what a workload draws above idle is its placement's `busy_energy` (`finance.py`).
    energy_month: dict[str, int] = field(default_factory=dict)
    # Bandwidth by duty (`finance.py`): the offer's included (minimum) Mbps, paid by
    # `bandwidth_month`, and what each Mbps beyond it costs over the whole horizon.
    bandwidth_mbps: int = 0
    extra_mbps_cost: int = 0
    # Colocation terms (`finance.py`): months each rack is paid for (the horizon, or the
    # offer's minimum term when longer; 0 = the horizon) and a one-off fee once used.
    rent_months: int = 0
    setup_fee: int = 0
    # What each rack keeps from servers (rack_w/rack_units above are what servers may use):
    # the compute-fabric switches must fit in it after the rack's own ToR (`fabric.py`).
    reserved_w: int = 0
    reserved_units: int = 0
    # Per rack: its top-of-rack and management switches, their uplinks, and its PDUs where
    # the rent does not include them (`candidates/network.py::RackNetwork`).
    rack_network_capex: int = 0
    rack_servers: int = 0  # most servers a rack holds: each switch has a port for each
    rack_network_w: int = 0
    rack_network_units: int = 0
    # W each of a rack's two PDU feeds must carry alone (its contracted kW) where the rent
    # does not include PDUs; 0: included, none bought.
    pdu_feed_w: int = 0
    storage: tuple[StorageKind, ...] = ()  # shared-storage nodes the site may buy


@dataclass(frozen=True, slots=True)
class Placement:
    """An owned option hosted at one site. Slotted: the market scale holds hundreds of
    thousands (a per-instance dict would double each one's size)."""

    site: str
    penalty: int = 0  # soft-rule penalties (money-equivalent, whole horizon)
    violates: frozenset[str] = frozenset()
    # Energy the option's servers draw above idle here while the workload runs, whole
    # horizon (`finance.busy_energy`): real money, unlike `penalty`.
    busy_energy: int = 0
    # (money, share) of the penalties here that take a share of the option's servers'
    # price (`OwnedOption.penalty_base`): a server price probe prices them again.
    penalty_shares: tuple[tuple[float, float], ...] = ()
    # Renting the workload's cheapest rental while the owned servers it runs on here come
    # from the team's stock at another site (the move's downtime) or, where the stock
    # falls short, until the purchased rest is delivered (`candidates/delivery.py`):
    # whole amount; 0 where the site's own stock holds the option's servers.
    bridge: int = 0


@dataclass(frozen=True)
class OwnedOption:
    """One way to run a workload on bought servers of one SKU, all at one site."""

    key: str  # unique within the instance
    workload: str
    sku: str
    servers: int  # servers this workload occupies while it runs
    slot: Slot
    placements: tuple[Placement, ...]
    throughput: int = 0  # work per second (tokens/s), for max-throughput and tie-breaks
    headroom_permille: int = 0  # free memory per GPU, for tie-breaks
    penalty: int = 0  # soft-rule penalties independent of the site
    violates: frozenset[str] = frozenset()
    # The servers' price (VAT in) that penalties taking a share of the option's cost are
    # priced on, and (money, share) of each such penalty independent of the site.
    penalty_base: float = 0.0
    penalty_shares: tuple[tuple[float, float], ...] = ()
    bandwidth_mbps: int = 0  # internet bandwidth the workload needs at its site while it runs
    spans: bool = False  # one job across servers: they join the site's compute fabric
    storage_gb: int = 0  # checkpoints kept + dataset on the site's shared storage
    # Renting the workload's cheapest rental from the plan's start until the servers are
    # delivered (their lead time): whole amount; 0 without a lead time or a rental.
    bridge: int = 0
    # A mixed option: these servers carry `share_permille` of the workload's demand (its
    # base load) and `burst`, a rental sized for the rest, carries the remainder; chosen
    # together (`candidates/burst.py`). `throughput` counts both.
    share_permille: int = 1000
    burst: CloudOption | None = None

    @property
    def rent(self) -> int:
        """What choosing this option rents besides the servers: until their delivery,
        and its burst."""
        return self.bridge + (self.burst.cost_total if self.burst is not None else 0)

    @property
    def burst_penalty(self) -> int:
        return self.burst.penalty if self.burst is not None else 0


@dataclass(frozen=True)
class Stock:
    """Servers already owned at one site (`inventory.py`): free to use, never bought."""

    sku: str
    site: str
    count: int
    resale: int = 0  # per server sold; 0 when it cannot be sold (left idle instead)
    # Per server moved to another site (`inventory.py`); None: it stays where it is.
    move_cost: int | None = None
    # Days a moved server is out of service (freight, re-racking, burn-in): its workload
    # rents meanwhile (`Placement.bridge`).
    move_downtime_days: float = 0.0


@dataclass(frozen=True)
class Contract:
    """Racks already contracted at a site: paid for `months_paid` months of the horizon."""

    site: str
    racks: int
    months_paid: int


@dataclass(frozen=True)
class StorageKind:
    """A shared-storage node: usable capacity, price, and what it takes of the reserve."""

    id: str
    capacity_gb: int
    price: int
    power_w: int
    rack_units: int


@dataclass(frozen=True)
class SwitchOption:
    """A smaller switch that may serve a site's whole fabric of one class alone."""

    id: str
    radix: int  # logical ports at the class's NIC rate
    price: int
    power_w: int
    units: int


@dataclass(frozen=True)
class FabricClass:
    """A compute fabric for servers of one NIC kind and rate: its switch and link.

    A site's fabric of this class is one switch (up to `radix` ports), one of the smaller
    switches in `small` (up to its radix), a two-tier fat tree (leaves with `down_ports`
    to servers and `radix - down_ports` to spines, equal when non-blocking; `down_ports /
    up` is the oversubscription), or, for two servers, NIC-to-NIC cables (`direct_link`)
    and no switch at all."""

    id: str
    switch: str  # catalogue ids, for the cost lines
    link: str
    radix: int  # logical ports per switch at the NIC rate
    down_ports: int
    switch_price: int
    switch_power_w: int
    switch_units: int
    link_price: int
    small: tuple[SwitchOption, ...] = ()  # fewer ports and cheaper than `switch`
    direct_link: str | None = None  # catalogue id of a NIC-to-NIC cable; None: no direct
    direct_link_price: int = 0

    @property
    def up_ports(self) -> int:
        return self.radix - self.down_ports


@dataclass(frozen=True)
class CloudOption:
    """Renting instances instead of buying."""

    key: str
    workload: str
    offer: str
    region: str
    instances: int
    cost_total: int  # rental over the whole horizon
    throughput: int = 0
    headroom_permille: int = 0
    penalty: int = 0
    violates: frozenset[str] = frozenset()
    # (money, share) of each penalty taking a share of `cost_total`: a cloud price probe
    # prices them again.
    penalty_shares: tuple[tuple[float, float], ...] = ()
    share_permille: int = 1000  # of the workload's demand it is sized for (a burst: less)


@dataclass(frozen=True)
class Requirement:
    """A user-level requirement, named so explanations speak the user's language."""

    name: str  # e.g. "deadline:ft-7b", "capex", "regions:chat", "racks:suzhou-liquid"
    description: str  # e.g. "deadline of 72 h for ft-7b"
    weight: int = 1  # for the minimum correction set: how hard it is to relax


@dataclass(frozen=True)
class Instance:
    workloads: tuple[str, ...]
    skus: dict[str, Sku]
    sites: dict[str, Site]
    owned: tuple[OwnedOption, ...]
    cloud: tuple[CloudOption, ...]
    horizon_months: int
    requirements: dict[str, Requirement] = field(default_factory=dict)
    capex_max: int | None = None  # enforced by requirement "capex"
    monthly_max: int | None = None  # enforced by requirement "monthly"
    # Capex + opex over the horizon (no residual credit), enforced by requirement "total".
    total_max: int | None = None
    objective: ObjectiveKind = "min-tco"
    # max-throughput: each workload's weight (default 1); see `costs.throughput_scores`.
    throughput_weights: dict[str, float] = field(default_factory=dict)
    # The best throughput per workload the scores are shares of, where it is not the best
    # among this instance's own options: an instance cut down from a larger one (why-not)
    # keeps the larger one's scale, so its plans score as they did there.
    throughput_best: dict[str, int] = field(default_factory=dict)
    # Rentals sized for a share of a workload's demand (`CloudOption.share_permille`): the
    # bursts mixed options pick from (`candidates/burst.py`), never chosen alone.
    bursts: tuple[CloudOption, ...] = ()
    # N+1: one spare server per (SKU, site) in use, bought, racked and idle (`finance.py`).
    spares: bool = False
    fabrics: dict[str, FabricClass] = field(default_factory=dict)  # by id (Sku.fabric)
    # The inventory (`inventory.py`): owned servers per (SKU, site), contracted racks by site.
    stock: tuple[Stock, ...] = ()
    contracts: dict[str, Contract] = field(default_factory=dict)
    # Per workload, the soft-rule preferences each allowed option (an owned option at one
    # site, or a rental) misses, with its card: (card, {(rule, judged)}), before the ones
    # every option misses were stripped (`candidates/preferences.py`). A card's options
    # generated again alone judge what every option misses over these and their own.
    missed: dict[str, frozenset[tuple[str, frozenset[tuple[str, str]]]]] = field(
        default_factory=dict
    )
    # Site-level requirements: racks at a site may not exceed what is available
    # (requirement name "racks:<site>"); explain mode may relax it.
    # Ways to pay for bought servers over time the plan may choose (`financing.py`); empty:
    # every server is paid in cash.
    financing: tuple[FinanceOffer, ...] = ()


@dataclass(frozen=True)
class FinanceOffer:
    """A finance lease or instalment plan any bought server may be paid by
    (`financing.py` turns a server's price into its payments, whole units).

    A financed server still counts its price in `Costs.capex`; what financing adds to it is
    in `Costs.financing`, and only the down payment counts against the capex cap."""

    name: str
    annual_rate: float
    term_months: int
    down_payment: float  # share of the price paid at delivery
    buy_out: float  # share of the price paid with the last instalment
    # The requirements' discount rate: the objective counts the payments' present value at
    # it; None: their nominal sum, as every other cost.
    discount_rate: float | None = None


ScheduleSolver = Literal["race", "highs", "cp-sat"]


@dataclass(frozen=True)
class SolveConfig:
    time_limit_s: float = 60.0  # wall clock: depends on the machine's load
    # CP-SAT's deterministic time per solve (its own unit of work, about a second of one
    # core on an idle machine): the same inputs stop at the same point on any load, so
    # they give the same plan and status. None: the wall clock alone.
    work_limit: float | None = None
    workers: int = 2
    seed: int = 1
    relative_gap: float = 0.0
    # Who solves a schedule's model (a MILP): CP-SAT and HiGHS raced by default (the winner
    # by their work, `milp/race.py`), either alone on request; CP-SAT where the model is not
    # a MILP (`optimize/phased/solve.py`). Single plans are CP-SAT's.
    schedule_solver: ScheduleSolver = "race"
    # Start the search from the warm start's plan when no hint is given (`warmstart.py`);
    # off only to measure what it is worth.
    warm_start: bool = True
    # How the search spends its time (`tuning.py`); never what it proves.
    tuning: Tuning = field(default_factory=Tuning)


@dataclass(frozen=True)
class Choice:
    workload: str
    option: str  # OwnedOption.key or CloudOption.key
    site: str | None  # None for cloud


@dataclass(frozen=True)
class Costs:
    capex: int
    rack_rent: int  # whole horizon
    energy: int  # whole horizon
    bandwidth: int  # whole horizon
    cloud: int  # whole horizon
    penalties: int
    residual: int = 0  # owned servers' value at the end of the horizon: a credit
    network: int = 0  # of capex: switches, links, NICs (already inside `capex`)
    storage: int = 0  # of capex: shared-storage nodes (already inside `capex`)
    # Owned servers sold now (`inventory.py`): a credit apart from the TCO.
    resale: int = 0
    # Servers financed (`financing.py`): what financing adds to their price (in the TCO),
    # the price less down payments (outside the capex cap), the instalments paid within the
    # horizon (inside the monthly cap), and the objective's present-value steer.
    financing: int = 0
    financed: int = 0
    instalments: int = 0
    financing_steer: int = 0

    @property
    def tco(self) -> int:
        spend = self.capex + self.rack_rent + self.energy + self.bandwidth + self.cloud
        return spend + self.financing - self.residual

    @property
    def objective_tco(self) -> int:
        return self.tco + self.penalties - self.resale + self.financing_steer

    @property
    def cash_capex(self) -> int:
        """What the capex cap counts: purchases paid in cash and the down payments."""
        return self.capex - self.financed

    @property
    def capped_opex(self) -> int:
        """What the monthly cap counts over the horizon: running costs and instalments."""
        return self.rack_rent + self.energy + self.bandwidth + self.cloud + self.instalments


@dataclass(frozen=True)
class Solution:
    status: Status
    choices: tuple[Choice, ...] = ()
    servers: dict[tuple[str, str], int] = field(default_factory=dict)  # (sku, site) -> count
    racks: dict[tuple[str, tuple[tuple[str, int], ...]], int] = field(
        default_factory=dict
    )  # (site, pattern as sorted (sku, count) pairs) -> racks of that fill
    costs: Costs | None = None
    objective_value: int | None = None
    best_bound: int | None = None
    wall_s: float = 0.0
    binding: tuple[str, ...] = ()  # names of requirements/capacities that are tight
    fabric: dict[tuple[str, str], FabricCount] = field(default_factory=dict)  # (site, class)
    storage: dict[tuple[str, str], int] = field(default_factory=dict)  # (site, kind) -> nodes
    # Servers bought per (sku, site): `servers` less the owned ones put in service.
    bought: dict[tuple[str, str], int] = field(default_factory=dict)
    # Owned servers moved per (sku, from site, to site) (`inventory.py`).
    moved: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # Bought servers financed per (sku, site, FinanceOffer.name) (`financing.py`).
    leased: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # Set when the plan is the fallback (`fallback.py`: "all-rent", "greedy" or
    # "restricted"): the search stopped at its limit without finding a better one.
    fallback: str | None = None


@dataclass(frozen=True)
class FabricCount:
    """A site's compute fabric of one class as solved: switches and links."""

    ports: int  # server ports cabled to switches
    single: int  # 1 when one `FabricClass.switch` holds every port
    leaves: int
    spines: int
    small: str | None = None  # the `FabricClass.small` switch that holds every port
    direct_links: int = 0  # NIC-to-NIC cables of two servers back-to-back (no switch)

    @property
    def switches(self) -> int:
        return self.single + self.leaves + self.spines + (self.small is not None)


def rentals(solution: Solution, instance: Instance) -> list[tuple[Choice, CloudOption]]:
    """Every rental the plan pays for the whole horizon: the chosen rentals, and the burst
    of each chosen mixed option (as a choice of its own workload, at no site)."""
    cloud = {c.key: c for c in instance.cloud}
    owned = {o.key: o for o in instance.owned}
    out = []
    for choice in solution.choices:
        if choice.option in cloud:
            out.append((choice, cloud[choice.option]))
        burst = owned[choice.option].burst if choice.option in owned else None
        if burst is not None:
            out.append((Choice(choice.workload, burst.key, None), burst))
    return out
