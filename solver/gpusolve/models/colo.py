"""Output of `gpusolve colo`: colocation offers ranked for one fleet of servers."""

from __future__ import annotations

from pydantic import Field

from gpusolve.models.plan import OutModel


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
    tco: float | None = None
    pue: float
    power_price_per_kwh: float
    latency_ms_to_shanghai: float | None = None


class ColoReport(OutModel):
    currency: str
    horizon_months: int
    fleet: dict[str, int]
    fleet_power_kw: float
    offers: list[ColoRow]
