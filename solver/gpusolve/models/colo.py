"""Output of `gpusolve colo`: colocation offers ranked for one fleet of servers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import OutModel, schema_version_field
from gpusolve.models.plan import ComplianceLine, Excluded


class ColoRuleHit(OutModel):
    """A rule that fired on one fleet line at this offer: the same rule, on the same
    placement, that `plan` charges (prefer) or refuses (require)."""

    rule: str
    source: str = Field(description="Heuristic the rule comes from (H01-H44), when known.")
    effect: str = Field(description="'penalty' (prefer: steers, not spent) or 'refused' (require).")
    server: str = Field(description="The fleet line's server.")
    judged: str = Field(description="What the rule judged: offer or deployment (at the offer).")
    reason: str
    amount: float = Field(default=0.0, description="Penalty, run currency (0 for 'refused').")


class RuleNotJudged(OutModel):
    rule: str
    source: str
    why: str


class ColoRow(OutModel):
    offer: str
    provider: str
    region: str
    city: str
    cooling: str
    rack_kw: float
    reserved_kw: float = Field(
        default=0.0, description="kW of each rack kept from servers (switches, PDUs, margin)."
    )
    feasible: bool
    reasons: list[str] = Field(default_factory=list, description="Why it cannot host the fleet.")
    timed_out: bool = Field(
        default=False,
        description="No packing was found within the time limit; none was proven impossible.",
    )
    notes: list[str] = Field(default_factory=list, description="Soft concerns (rules, H19/H37).")
    racks: int | None = None
    racks_available: int
    fill: list[dict[str, int]] = Field(default_factory=list)
    rack_rent_month: float | None = None
    energy_month: float | None = None
    bandwidth_month: float | None = None
    monthly: float | None = None
    moves: float = Field(
        default=0.0,
        description="Owned servers moved here from their site: what the moves cost, once "
        "(in the TCO, as `plan` charges them).",
    )
    servers_moved: int = Field(default=0, description="Owned servers moved here.")
    move_downtime_days: float = Field(
        default=0.0,
        description="The longest time a moved server is out of service. Stated, not priced: "
        "a fleet has no workload to rent for; `plan` rents each moved server's workload "
        "its cheapest rental for these days.",
    )
    tco: float | None = None
    pue: float
    power_price_per_kwh: float
    latency_ms_to_shanghai: float | None = None
    rules: list[ColoRuleHit] = Field(
        default_factory=list, description="The placement rules that fired, per fleet line."
    )
    penalties: float = Field(default=0.0, description="Soft-rule penalties: steer, not spent.")
    objective: float | None = Field(
        default=None, description="tco + penalties: what the ranking (like `plan`) minimises."
    )


class ColoReport(OutModel):
    kind: Literal["colo"] = Field(default="colo", description="What this result is.")
    schema_version: int = schema_version_field()
    currency: str
    horizon_months: int
    fleet: dict[str, int]
    fleet_power_kw: float
    offers: list[ColoRow]
    market: str | None = Field(default=None, description="cn or global, as in `plan`.")
    market_basis: str | None = Field(default=None, description="Why the run is in that market.")
    compliance: list[ComplianceLine] = Field(
        default_factory=list, description="Each card of the fleet, judged as `plan` does."
    )
    excluded: list[Excluded] = Field(
        default_factory=list, description="Servers the market keeps from being bought."
    )
    rules_judged: list[str] = Field(
        default_factory=list, description="Placement rules applied to every offer, as `plan`."
    )
    rules_not_judged: list[RuleNotJudged] = Field(
        default_factory=list,
        description="Placement rules that depend on the workload: `plan` applies them.",
    )
