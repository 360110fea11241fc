"""Output of `gpusolve frontier`: non-dominated (cost, time) plans."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.plan import OutModel


class FrontierPoint(OutModel):
    deadline_factor: float = Field(description="Every training deadline was multiplied by this.")
    tco: float
    capex: float
    makespan_h: float = Field(description="Longest time to train among the training workloads.")
    hardware: list[str] = Field(description="Per workload: servers or rental chosen.")
    proven_optimal: bool = Field(
        default=True, description="False when the time ran out first (a feasible plan)."
    )


class Frontier(OutModel):
    currency: str
    horizon_months: int
    points: list[FrontierPoint]
    infeasible_factors: list[float] = Field(
        default_factory=list, description="Deadline factors proven to admit no plan."
    )
    timed_out_factors: list[float] = Field(
        default_factory=list,
        description="Deadline factors where no plan was found within the time limit "
        "(not proven impossible).",
    )
    status: Literal["optimal", "feasible", "infeasible", "timeout"] = Field(
        default="optimal",
        description="optimal: every point proven; feasible: some point not proven optimal or "
        "some factor timed out; infeasible: no factor admits a plan (proven); timeout: no "
        "plan found and some factor timed out.",
    )
