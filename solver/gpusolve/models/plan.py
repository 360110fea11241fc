"""The output contract of `gpusolve plan`: one typed Plan rendered five ways."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from gpusolve.models.common import OutModel, schema_version_field
from gpusolve.models.inventory_report import Inventory
from gpusolve.models.money import Cash, FinancedServers, Risk
from gpusolve.models.parts import GoodputOut, PoolSplits

# "timeout": no plan was found within the time limit and none was proven impossible.
# "interrupted": Ctrl-C or SIGTERM stopped the search; the best plan so far, not proven optimal.
PlanStatus = Literal["optimal", "feasible", "infeasible", "unknown", "timeout", "interrupted"]


CostKind = Literal[
    "servers_capex",
    "rack_rent",
    "energy",
    "bandwidth",
    "cloud_rental",
    "network",
    "storage",
    "workload_moves",
    "financing",
]


class CostItem(OutModel):
    """One line of the TCO over the whole horizon, in whole units of the currency."""

    kind: CostKind = Field(description="The breakdown total this line adds to.")
    subject: str = Field(description="Server SKU (capex), colo site (monthly items) or offer.")
    detail: str = Field(description="How the amount is made up, e.g. '2 racks x 6,000/month'.")
    amount: float = Field(description="Whole horizon; the lines of a kind sum to its total.")
    # The purchase-order view of the same line (bill of materials, CSV export): each item
    # says how many, at what unit price, where the price comes from and whether it is a
    # real quote. Optional because monthly and rental lines are not bought by the piece.
    quantity: float | None = Field(default=None, description="How many units the line buys.")
    unit: str = Field(default="", description="What one unit is: server, rack-month, switch, ...")
    unit_price: float | None = Field(default=None, description="Price of one unit.")
    source: str = Field(default="", description="Where the price comes from (catalogue file).")
    illustrative: bool = Field(default=False, description="True when the price is not a quote.")
    site: str | None = Field(
        default=None, description="Colo site the line is for (None: cloud or plan-wide)."
    )


class PenaltyItem(OutModel):
    """One soft-rule (`prefer`) penalty the objective charges: not money spent."""

    rule: str
    source: str = Field(description="Heuristic the rule comes from (H01-H44), when known.")
    reason: str
    judged: str = Field(description="What the rule judged: card, server, offer, cloud, deployment.")
    workload: str
    deployment: str = Field(description="The deployment it applies to.")
    amount: float


class UnmetPreference(OutModel):
    """A soft rule (`prefer`) that no allowed option of a workload meets: it charges no
    penalty (it would tilt nothing the plan can change) and the plan says why."""

    workload: str
    rule: str
    source: str = Field(description="Heuristic the rule comes from (H01-H44), when known.")
    judged: str = Field(description="What the rule judges: card, server, offer, cloud, deployment.")
    reason: str = Field(description="The rule's own reason for the preference.")
    why: str = Field(description="Why no allowed option meets it.")


class MarginMiss(OutModel):
    """A candidate the margin alone keeps out of the plan: its fastest layout meets the
    workload's target as written, not the target with its margin, so the optimiser never
    weighs it. The user decides whether the margin is worth it (`margin:`)."""

    workload: str
    candidate: str = Field(description="Server or cloud offer id.")
    servers: int = Field(description="Servers (or instances) of its fastest layout.")
    gpus: int
    hours: float = Field(description="One run on that layout, hours.")
    deadline_hours: float = Field(description="The deadline as written.")
    margin: float = Field(description="The margin: runs are sized to deadline / (1 + margin).")
    spare: float = Field(description="deadline / hours - 1: the margin this candidate keeps.")
    rental_cost: int | None = Field(
        default=None,
        description="A cloud offer: renting that layout over the horizon, as the plan would "
        "price it (its cheapest price tier for the hours, VAT in); None for a server.",
    )

    def margin_to_let_in(self) -> float:
        """The largest whole-percent margin this candidate meets: written in, it lets the
        plan weigh the candidate."""
        return math.floor(self.spare * 100) / 100


class CostBreakdown(OutModel):
    servers_capex: float = 0.0
    rack_rent: float = 0.0
    energy: float = 0.0
    bandwidth: float = 0.0
    cloud_rental: float = 0.0
    network: float = Field(
        default=0.0,
        description="Capex of the cluster network: fabric switches and links, NICs bought "
        "apart from servers, each rack's top-of-rack switch and uplinks.",
    )
    penalties: float = 0.0
    storage: float = Field(
        default=0.0,
        description="Capex of shared checkpoint and dataset storage (H16): storage nodes.",
    )
    financing: float = Field(
        default=0.0,
        description="What financing adds to the price of the servers the plan finances "
        "(interest and fees; finance.financing: optimise).",
    )
    items: list[CostItem] = Field(
        default_factory=list, description="The TCO line by line; sums to `Cost.tco`."
    )
    penalty_items: list[PenaltyItem] = Field(
        default_factory=list, description="Each soft-rule penalty; sums to `penalties`."
    )


class ResaleLine(OutModel):
    """What the servers of one model at one site would fetch if sold at the horizon."""

    server: str
    site: str
    count: int
    unit_value: float = Field(description="Per server, whole units.")
    amount: float = Field(description="count x unit_value: a credit, >= 0.")
    detail: str = Field(description="How the value is made up, in words.")
    source: str = Field(description="The curve or book-value rule, and the price's source.")


class ResaleCredit(OutModel):
    """What the servers bought would fetch if sold at the end of the horizon
    (`finance.residual_value`): shown beside the TCO, never inside it; a money objective
    subtracts it."""

    amount: float = Field(description="Sum of the lines, >= 0.")
    month: int = Field(description="When the servers would be sold: the horizon's end.")
    basis: str = Field(description="Resale curve or straight-line book value, in words.")
    lines: list[ResaleLine] = Field(default_factory=list)


class Cost(OutModel):
    capex: float
    monthly_opex: float
    tco: float = Field(
        description="Money spent: capex plus every monthly item over the horizon "
        "(capex + monthly_opex x horizon_months); no resale credit."
    )
    currency: str
    horizon_months: int
    breakdown: CostBreakdown
    penalties: float = Field(default=0.0, description="Soft-rule penalties: steer, not spent.")
    horizon_resale: ResaleCredit | None = Field(
        default=None,
        description="What the servers bought would fetch if sold at the end of the horizon "
        "(finance.residual_value): a credit apart from the TCO; None when residual value is "
        "off (the default) or nothing is bought.",
    )
    objective_value: float = Field(
        default=0.0,
        description="What a money objective minimises: tco + penalties - resale - "
        "horizon_resale (both credits, apart from the TCO).",
    )
    resale: float = Field(
        default=0.0,
        description="Owned servers sold (the requirements' `owned:` resale prices): a credit "
        "apart from the TCO.",
    )

    @property
    def credits(self) -> float:
        """Both resale credits the objective subtracts: owned servers sold now and the
        servers bought, sold at the horizon."""
        end = self.horizon_resale.amount if self.horizon_resale is not None else 0.0
        return self.resale + end


class ThroughputDelta(OutModel):
    workload: str
    delta: float = Field(description="Other plan minus this plan, as printed (whole units).")
    unit: str


class PlanDelta(OutModel):
    """Another plan compared with the chosen one: other minus chosen, each figure apart."""

    tco: float
    penalties: float
    objective_value: float = Field(
        description="Objective, other minus chosen: tco + penalties - resale credits."
    )
    throughput: list[ThroughputDelta] = Field(default_factory=list)
    summary: str = Field(description="The deltas in words, signed by wording, never '+-'.")


class Parallel(OutModel):
    tp: int
    pp: int
    dp: int
    vp: int = Field(default=1, description="Virtual pipeline stages per rank (interleaved).")
    cp: int = Field(default=1, description="Context-parallel degree.")
    ep: int = Field(default=1, description="Expert-parallel degree (MoE).")
    attention_dp: bool = Field(
        default=False,
        description="Serving an MoE model: attention data-parallel over the replica's ranks.",
    )
    sequence_parallel: bool = False
    zero_stage: int
    gradient_checkpointing: str
    micro_batch: int
    grad_accum: int


class Pools(PoolSplits):
    """Disaggregated serving: a prefill pool and a decode pool of the deployment's servers."""

    prefill_tp: int
    prefill_replicas: int
    decode_tp: int
    decode_replicas: int
    one_server: bool = Field(description="Both pools share one server (else servers of their own).")
    gpus_per_node: int
    link: str = Field(description="What carries each prompt's KV cache between the pools.")


class Deployment(OutModel):
    workload: str
    mode: Literal["owned", "cloud"]
    card: str
    server: str | None
    cloud_offer: str | None = None
    servers: int
    gpus: int
    parallel: Parallel
    site: str | None
    schedule: str
    memory_per_gpu_gb: float
    memory_parts_gb: dict[str, float] = Field(
        default_factory=dict,
        description="memory_per_gpu_gb by part (weights, gathered_weights, gradients, "
        "optimizer, activations, kv_cache, overhead), GB; the parts sum to it.",
    )
    card_memory_gb: float = Field(description="Memory the device reports, GB.")
    usable_memory_gb: float = Field(description="card_memory_gb × (1 − headroom), GB.")
    headroom: float
    time_to_train_h: float | None = Field(
        description="Hours per run, failures and restarts included (see goodput)."
    )
    goodput: GoodputOut | None = Field(
        default=None,
        description="Training: steady-state time and what failures, restarts and planned "
        "overhead add (estimate/goodput.py); rental hours and cost use the total.",
    )
    run_cost: float | None = Field(
        default=None,
        description="Training: what one run costs in the TCO lines its hours drive (its cloud "
        "rental, or its owned servers' energy above idle), that line x hours per run / hours "
        "of use; goodput's parts share it by their hours. Null for inference.",
    )
    run_cost_basis: str = Field(
        default="", description="Training: which line run_cost comes from, in words."
    )
    mfu: float | None = Field(default=None, description="Training: the MFU the step gives.")
    throughput: float = Field(description="Training tokens/s, or generated tokens/s for inference.")
    replicas: int = 1
    rental_hours: float = 0.0
    pools: Pools | None = Field(
        default=None, description="Inference: the prefill and decode pools when disaggregated."
    )
    serving: list[str] = Field(
        default_factory=list,
        description="Inference: the prefill and decode pools when disaggregated, and why "
        "aggregated or disaggregated serving needs fewer GPUs at the workload's targets.",
    )
    calibration: list[str] = Field(
        default_factory=list,
        description="How a measured run (H12) calibrated these figures and how it was "
        "transferred to this card (same family: its measured efficiency; another family: the "
        "ratio of their achievable fractions).",
    )
    margin: float = Field(
        default=0.0,
        description="Capacity bought above the target, as a fraction (candidates/margin.py): "
        "serving sized for target x (1 + margin), training for deadline / (1 + margin).",
    )
    target: float | None = Field(
        default=None,
        description="The workload's target as written, in target_unit: generated tokens/s, "
        "users at once, or deadline hours per run. Null when it states none.",
    )
    target_unit: str = Field(default="", description="tokens/s, users or h (a deadline).")
    delivery: str = Field(
        default="",
        description="Owned servers with a lead time: when they work, and what runs the "
        "workload until then (its cheapest rental, or nothing).",
    )
    spare: float | None = Field(
        default=None,
        description="What the deployment delivers beyond the target, as a fraction of it: "
        "tokens/s (or users held) / target - 1, or deadline / hours per run - 1.",
    )
    share: float = Field(
        default=1.0,
        description="Of the workload's demand this deployment carries: below 1 for a service "
        "split between owned servers at base load and a rented burst (two deployments of "
        "the workload, their shares summing to 1); `target` is this share of the whole.",
    )
    split: str = Field(
        default="",
        description="A split service: which part this deployment is and why the plan splits.",
    )


class Site(OutModel):
    offer: str
    region: str
    city: str
    racks: int
    servers: dict[str, int]
    power_kw: float
    rack_kw: float
    cooling: str
    fill: list[dict[str, int]] = Field(description="Servers per rack, one entry per rack.")
    fill_kw: list[float] = Field(
        default_factory=list, description="Peak kW drawn in each rack (same order as fill)."
    )
    reserved_kw: float = Field(
        default=0.0,
        description="kW of each rack kept from servers: continuous-load margin, switches, "
        "PDUs (rule rack_load_fraction, or the offer's usable_kw).",
    )
    reserved_units: int = Field(
        default=0, description="Rack units of each rack kept free of servers (switches, PDUs)."
    )


class RuleFired(OutModel):
    rule: str
    source: str
    title: str
    workloads: list[str]


class Constraint(OutModel):
    name: str
    detail: str
    used: float | None = Field(
        default=None,
        description="What the plan uses against the limit: money, racks, or the fullest "
        "rack's kW (rack power), where a figure shows it.",
    )
    limit: float | None = Field(default=None, description="The cap or limit itself.")


class Alternative(OutModel):
    rank: int
    tco: float
    delta: float = Field(description="Objective value (TCO + penalties) minus the plan's.")
    differs: str
    deployments: list[Deployment]
    penalties: float = 0.0
    cost: Cost | None = None
    compared: PlanDelta | None = None


class WhyNot(OutModel):
    """`--why-not`: the best plan with one workload forced onto the item, against the plan."""

    workload: str
    item: str
    deployments: list[Deployment] = Field(description="The whole forced plan.")
    cost: Cost
    compared: PlanDelta


class Relaxation(OutModel):
    requirement: str
    detail: str
    suggestion: str | None = None


class Infeasibility(OutModel):
    reason: str
    conflicting: list[Relaxation] = Field(default_factory=list)
    workloads_without_candidates: dict[str, list[str]] = Field(default_factory=dict)
    minimal: bool = Field(
        default=True,
        description="Every conflicting requirement was proved necessary (dropping any one "
        "of them admits a plan).",
    )
    timed_out: bool = Field(
        default=False,
        description="The explanation ran out of time: the conflict may hold more than it "
        "needs, or none was found.",
    )


class TimedOut(OutModel):
    """No plan within the time limit, and no proof that none exists."""

    reason: str
    time_limit_s: float
    best_bound: float | None = Field(
        default=None, description="Proven bound on the objective (what `bound_of` says)."
    )
    bound_of: str = Field(description="What the bound bounds, with its unit.")


class SolverInfo(OutModel):
    status: str
    wall_s: float | None = Field(
        default=None,
        description="Solve wall time; only with --timings (keeps output reproducible).",
    )
    workers: int
    seed: int
    objective_value: float | None = None
    best_bound: float | None = None
    gap: float | None = None
    proven_optimal: bool = False
    fallback: str | None = Field(
        default=None,
        description=(
            "Set when the search stopped at its limit without a better plan than the "
            "fallback checked before it: all-rent (every workload on its cheapest rental), "
            "greedy (each on its standalone-cheapest option) or restricted (the best over "
            "each workload's few cheapest options and every rental)."
        ),
    )
    candidate_layouts: int | None = Field(
        default=None,
        description=(
            "Options the optimum was chosen from: per server and cloud offer, every layout "
            "size searched that meets its deadline and the rules (the proof holds over these)."
        ),
    )
    candidate_workloads: int | None = Field(
        default=None, description="Workloads those candidate layouts serve."
    )


class ComplianceLine(OutModel):
    """A card the plan uses: its export status for China and how the plan acquires it."""

    card: str
    use: str = Field(description="bought, rented, or both.")
    status: str = Field(description="restricted, licence-required, not-restricted or unknown.")
    rule: str | None = None
    source: str | None = None
    as_of: str | None = None
    verdict: str


class Excluded(OutModel):
    """A catalogue item kept out of the candidates by the market, and why."""

    item: str
    card: str
    status: str = Field(description="The card's export status that excludes it.")
    rule: str
    reason: str


class PatchRef(OutModel):
    at: str = Field(description="file:line of the `patch:` entry.")
    fields: list[str]


class SourceRef(OutModel):
    """Where a catalogue item the plan uses was defined, and every patch applied to it."""

    kind: str
    id: str
    defined_at: str = Field(description="file:line of the item's definition.")
    patched_at: list[PatchRef] = Field(default_factory=list)


BomSection = Literal["card", "server", "rack", "site", "network", "storage", "spare", "cloud"]


class BomLine(OutModel):
    """One line of the bill of materials: what a purchase order (or rental contract) holds."""

    section: BomSection = Field(description="card -> server -> rack -> site, then the rest.")
    item: str = Field(description="Catalogue id of what is bought or rented.")
    site: str | None = Field(default=None, description="Where it goes; None for cloud.")
    quantity: float = Field(description="How many units.")
    unit: str = Field(description="What one unit is: card, server, switch, rack-month, ...")
    unit_price: float | None = Field(
        default=None, description="Price of one unit; None where included in a parent line."
    )
    amount: float = Field(description="quantity x unit_price (0 where included in a parent).")
    source: str = Field(default="", description="Where the price comes from.")
    illustrative: bool = Field(default=False, description="True when the price is not a quote.")
    note: str = Field(default="", description="e.g. 'inside hgx-h100-8gpu', 'N+1 spare'.")


SensitivityKind = Literal[
    "server_price",
    "rack_rent",
    "power_price",
    "bandwidth_price",
    "cloud_price",
    "network_price",
    "storage_price",
    "efficiency",
]


class SensitivityRange(OutModel):
    """How far one price or assumption may move before the chosen plan stops being optimal."""

    kind: SensitivityKind
    subject: str = Field(
        description="Catalogue id (server, colo offer, cloud offer, switch, link, NIC, "
        "storage node) or card."
    )
    parameter: str = Field(description="In words, e.g. 'price of hgx-h100-8gpu'.")
    unit: str = Field(description="Unit of current/low/high, e.g. 'CNY/server', 'MFU'.")
    current: float
    low: float | None = Field(
        description="Lowest value at which the plan stays optimal; None: no change down to "
        "searched_low."
    )
    high: float | None = Field(
        description="Highest value at which the plan stays optimal; None: no change up to "
        "searched_high."
    )
    searched_low: float
    searched_high: float
    below: str | None = Field(default=None, description="The plan it switches to below low.")
    above: str | None = Field(default=None, description="The plan it switches to above high.")
    below_tco: float | None = None
    above_tco: float | None = None


class Sensitivity(OutModel):
    ranges: list[SensitivityRange] = Field(default_factory=list)
    solves: int = Field(default=0, description="Re-solves the analysis ran.")
    wall_s: float = 0.0
    not_searched: str | None = Field(
        default=None, description="Why no range was searched (the limits left too little)."
    )


class ScenarioOutcome(OutModel):
    """One scenario: what the hedged plan and the nominal plan cost if it happens."""

    name: str
    probability: float
    tco: float = Field(description="The hedged plan's TCO in this scenario.")
    nominal_tco: float | None = Field(
        description="The nominal plan's TCO in this scenario (its rentals re-chosen); None "
        "when the nominal plan cannot meet it."
    )
    rented: list[str] = Field(default_factory=list, description="What this scenario rents.")


class Scenarios(OutModel):
    """The plan that holds under every scenario against the plan for the nominal one."""

    robust: Literal["expected", "worst"]
    tco: float = Field(description="Expected (or worst-case) TCO of the hedged plan.")
    nominal_tco: float | None = Field(
        description="Expected (or worst-case) TCO of the nominal plan; None when it fails a "
        "scenario."
    )
    hedge_cost: float | None = Field(
        description="Hedged minus nominal plan's TCO in the nominal scenario alone."
    )
    outcomes: list[ScenarioOutcome] = Field(default_factory=list)


class PaymentMonth(OutModel):
    """What the plan pays in one month of the horizon, by kind (credits are not cash)."""

    month: int = Field(description="1 = the month of purchase.")
    capex: float = Field(description="Servers, network and storage bought, set-up fees.")
    rent: float = Field(description="Rack rent and bandwidth.")
    energy: float
    cloud: float = Field(description="Cloud rental.")
    other: float = Field(default=0.0, description="Kinds not named above.")
    total: float


class Payback(OutModel):
    """The plan against the cheapest plan that buys nothing (every workload rented)."""

    basis: str = Field(description="How the all-rental plan was found, in words.")
    rental_tco: float | None = Field(
        description="TCO of the cheapest all-rental plan; None when renting alone cannot "
        "meet the requirements or the plan itself buys nothing."
    )
    rental_proven_optimal: bool = False
    rental_cloud: float | None = Field(
        default=None, description="Of rental_tco, the cloud rental (the rest runs owned stock)."
    )
    rental_hardware: list[str] = Field(
        default_factory=list, description="What the all-rental plan rents, per workload."
    )
    rental_months: list[float] = Field(
        default_factory=list, description="The all-rental plan's spend per month."
    )
    payback_month: int | None = Field(
        default=None,
        description="First month from which the plan's cumulative spend stays at or below "
        "the all-rental plan's; None: never within the horizon, or nothing to compare.",
    )
    saving: float | None = Field(
        default=None,
        description="All-rental TCO minus the plan's spend over the horizon (credits apart).",
    )
    summary: str = Field(description="The comparison in words.")
    buying_tco: float | None = Field(
        default=None,
        description="A plan that buys nothing: TCO of the cheapest plan that rents nothing "
        "(every workload on servers bought or owned); None when none exists or not compared.",
    )
    buying_capex: float | None = Field(default=None, description="Of buying_tco, the capex.")
    buying_hardware: list[str] = Field(
        default_factory=list, description="What the cheapest buying plan runs, per workload."
    )
    buying_note: str = Field(
        default="", description="Why no buying plan was priced, when none was."
    )


class Plan(OutModel):
    kind: Literal["plan"] = Field(default="plan", description="What this result is.")
    schema_version: int = schema_version_field()
    status: PlanStatus
    objective: str
    cost: Cost | None
    deployments: list[Deployment] = Field(default_factory=list)
    sites: list[Site] = Field(default_factory=list)
    inventory: Inventory | None = Field(
        default=None, description="The owned servers and contracted racks, and their fate."
    )
    binding: list[Constraint] = Field(default_factory=list)
    budgets_not_binding: list[Constraint] = Field(
        default_factory=list,
        description="Budget caps the plan is not at, with what it spends under each.",
    )
    unmet_preferences: list[UnmetPreference] = Field(
        default_factory=list,
        description="Soft rules no allowed option meets: no penalty charged, and why.",
    )
    margin_misses: list[MarginMiss] = Field(
        default_factory=list,
        description="Candidates that meet a deadline as written but not with its margin, "
        "so the plan does not weigh them.",
    )
    rules_fired: list[RuleFired] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    why_not: dict[str, list[str]] = Field(default_factory=dict)
    why_not_plans: list[WhyNot] = Field(
        default_factory=list, description="The figures behind each 'dearer/cheaper by' line."
    )
    infeasibility: Infeasibility | None = None
    timed_out: TimedOut | None = None
    warnings: list[str] = Field(default_factory=list)
    illustrative_prices: list[str] = Field(
        default_factory=list,
        description="Catalogue items this plan uses whose price is illustrative, not a quote.",
    )
    solver: SolverInfo
    market: str | None = Field(default=None, description="cn or global.")
    market_basis: str | None = Field(default=None, description="Why the run is in that market.")
    compliance: list[ComplianceLine] = Field(default_factory=list)
    excluded: list[Excluded] = Field(default_factory=list)
    sources: list[SourceRef] = Field(default_factory=list)
    bom: list[BomLine] = Field(
        default_factory=list, description="Bill of materials: one line per item bought or rented."
    )
    sensitivity: Sensitivity | None = Field(
        default=None, description="plan --sensitivity: the range each price may move in."
    )
    scenarios: Scenarios | None = Field(
        default=None, description="A scenarios: block: the two-stage plan against the nominal."
    )
    payments: list[PaymentMonth] = Field(
        default_factory=list,
        description="When the plan's money is paid, month by month (explain/payments.py).",
    )
    payments_basis: str = Field(default="", description="How each kind is timed, in words.")
    payback: Payback | None = Field(
        default=None, description="The plan against the cheapest all-rental plan."
    )
    risk: Risk | None = Field(
        default=None, description="plan --risk N: the TCO over N draws (analyses/risk.py)."
    )
    financed: list[FinancedServers] = Field(
        default_factory=list,
        description="Servers the plan pays by a lease or instalments, on what terms and why "
        "(finance.financing: optimise); the rest are paid in cash.",
    )
    cash: Cash | None = Field(
        default=None,
        description="When the money leaves the bank (payment terms, financing), upkeep beside "
        "the TCO, and the NPV (explain/financing.py).",
    )
