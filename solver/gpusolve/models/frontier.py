"""Output of `gpusolve frontier`: non-dominated (cost, time) plans."""

from __future__ import annotations

from pydantic import Field

from gpusolve.models.plan import OutModel


class FrontierPoint(OutModel):
    deadline_factor: float = Field(description="Every training deadline was multiplied by this.")
    tco: float
    capex: float
    makespan_h: float = Field(description="Longest time to train among the training workloads.")
    hardware: list[str] = Field(description="Per workload: servers or rental chosen.")


class Frontier(OutModel):
    currency: str
    horizon_months: int
    points: list[FrontierPoint]
    infeasible_factors: list[float] = Field(default_factory=list)
