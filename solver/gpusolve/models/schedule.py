"""The output of `plan` with `periods:`: a purchase schedule, compared with two baselines."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import LazyOutModel, schema_version_field
from gpusolve.models.money import Cash
from gpusolve.models.plan import BomLine, Deployment, PlanStatus, Sensitivity

# One status vocabulary for every kind of plan (`models/plan.py`).
ScheduleStatus = PlanStatus


class Purchase(LazyOutModel):
    server: str
    site: str
    servers: int


class Running(LazyOutModel):
    workload: str
    option: str
    server: str | None = Field(description="Server model for an owned option; null when rented.")
    site: str | None
    offer: str | None = Field(default=None, description="Cloud offer when rented.")
    count: int = Field(description="Servers it occupies, or instances rented.")
    share: float = Field(
        default=1.0,
        description="Of the workload's demand it carries: below 1 where the service is split "
        "between owned servers at base load and a rented burst (two entries).",
    )


class PeriodSpend(LazyOutModel):
    capex: int
    rack_rent: int = Field(description="Racks contracted in this period, over their whole term.")
    site_fixed: int = Field(description="Included bandwidth over the period; setup fees.")
    energy: int
    cloud_rental: int
    residual_value: int = Field(
        description="What this period's purchases are worth at the horizon (a credit)."
    )
    switching: int = Field(
        default=0,
        description="Workloads moved to another platform or site at the period's start: "
        "their switching cost (re-deployment, validation, data transfer).",
    )
    monthly: int = Field(
        description="Spend per month in this period apart from capex: the racks held, and the "
        "period's energy, rentals and site fees a month."
    )


class WorkloadCapacity(LazyOutModel):
    workload: str
    capacity_tokens_per_s: int = Field(description="Tokens/s of what runs it in this period.")
    demand_tokens_per_s: float | None = Field(
        description="Tokens/s the period asks: inference, its target; training, its tokens "
        "over the hours of its slot in the period's months (null: stated as concurrency only)."
    )


class SchedulePeriod(LazyOutModel):
    index: int
    start_month: int
    months: int
    bought: list[Purchase]
    working: list[Purchase] = Field(description="Servers owned and working in this period.")
    racks: dict[str, int] = Field(description="Racks contracted per site in this period.")
    running: list[Running]
    spend: PeriodSpend
    bom: list[BomLine] = Field(
        default_factory=list,
        description="Bill of materials of this period: what it buys, the racks it contracts "
        "(their whole term), its energy, site fees and rentals; the lines add up to the "
        "period's spend (the residual value is a credit at the horizon, not a line).",
    )
    capacity: list[WorkloadCapacity] = Field(
        default_factory=list, description="Per workload running: what runs it against its demand."
    )
    deployments: list[Deployment] = Field(
        default_factory=list,
        description="What runs each workload in this period, as a single plan describes it "
        "(servers or instances, parallel layout, batch, throughput or time to train).",
    )


class YearCapex(LazyOutModel):
    year: int
    capex: int
    budget: int | None


class Baseline(LazyOutModel):
    name: Literal["buy-now", "rent-as-you-go", "single-period"]
    status: ScheduleStatus
    tco: int | None
    penalties: int = Field(default=0, description="Soft-rule penalties (not spent).")
    saving: int | None = Field(
        description="This baseline's TCO + penalties less the schedule's (what the model "
        "minimises); null when either has none."
    )
    bought: list[Purchase] = Field(
        default_factory=list,
        description="single-period: the servers the ordinary single plan buys at month 0.",
    )
    note: str | None = Field(default=None, description="What this baseline is, in words.")


class Schedule(LazyOutModel):
    """A purchase schedule over periods (`plan` with `periods:`)."""

    kind: Literal["schedule"] = "schedule"
    schema_version: int = schema_version_field()
    status: ScheduleStatus
    currency: str
    horizon_months: int
    tco: int | None = Field(description="Over the horizon, residual value credited.")
    penalties: int = 0
    resale: int = Field(default=0, description="Owned servers sold: credited apart from the TCO.")
    objective: int | None = Field(
        default=None, description="What the schedule minimises: TCO + penalties - resale."
    )
    best_bound: int | None = Field(
        description="Proven lower bound on TCO + penalties - resale (the objective)."
    )
    wall_s: float
    periods: list[SchedulePeriod]
    capex_by_year: list[YearCapex]
    baselines: list[Baseline]
    model_notes: list[str] = Field(description="What the phased model simplifies.")
    reason: str | None = None
    infeasibility: list[ScheduleInfeasibility] = Field(
        default_factory=list,
        description="Why the schedule or a baseline is infeasible: the requirements in conflict.",
    )
    alternatives: list[ScheduleAlternative] = Field(
        default_factory=list, description="--top-k: the next-best distinct schedules."
    )
    why_not: ScheduleWhyNot | None = Field(default=None, description="--why-not ID.")
    cash: Cash | None = Field(
        default=None,
        description="When the money leaves the bank: purchases on payment terms, rack "
        "contracts monthly, upkeep beside the TCO, the NPV (explain/financing.py).",
    )
    sensitivity: Sensitivity | None = Field(
        default=None,
        description="--sensitivity: how far each price the schedule pays may move before the "
        "schedule changes, and the schedule beyond each end.",
    )


# Analyses over periods (`analyses/phased.py`): why a schedule is infeasible, the next-best
# distinct schedules (--top-k), and why an item is not in the schedule (--why-not).


class Conflict(LazyOutModel):
    requirement: str = Field(description="e.g. capex_year:0, lead_time:<server>, demand:<w>:<p>")
    detail: str
    suggestion: str = Field(description="How far it must move, every other requirement held.")


class ScheduleInfeasibility(LazyOutModel):
    schedule: Literal["schedule", "buy-now", "rent-as-you-go"]
    reason: str
    conflicting: list[Conflict] = Field(
        description="A smallest set of requirements that cannot all hold together."
    )
    minimal: bool = Field(description="Every member was proved necessary.")
    timed_out: bool = False


class ScheduleAlternative(LazyOutModel):
    rank: int
    status: ScheduleStatus
    tco: int | None
    penalties: int = 0
    delta: int | None = Field(description="TCO + penalties less the schedule's (>= 0).")
    tco_delta: int | None = Field(description="TCO less the schedule's (may be negative).")
    bought: list[Purchase] = Field(description="Servers bought over the horizon.")
    difference: str = Field(description="What runs differently from the schedule.")


class ScheduleWhyNot(LazyOutModel):
    item: str
    in_schedule: bool
    lines: list[str]
    tco: int | None = Field(default=None, description="The schedule with the item forced in.")
    delta: int | None = Field(default=None, description="Its TCO + penalties less the schedule's.")
    bought: list[Purchase] = Field(default_factory=list)
