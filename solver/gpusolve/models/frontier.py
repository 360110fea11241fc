"""Output of `gpusolve frontier`: non-dominated (cost, time) plans."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import OutModel, schema_version_field


class FrontierPoint(OutModel):
    deadline_factor: float | None = Field(
        default=None,
        description="Every training deadline was multiplied by this (null on a faster point, "
        "which caps every training run at time_cap_h instead).",
    )
    time_cap_h: float | None = Field(
        default=None,
        description="Every training run was capped at this many hours (each within its own "
        "deadline too); null on a point of scaled deadlines.",
    )
    tco: float
    capex: float
    makespan_h: float = Field(description="Longest time to train among the training workloads.")
    hardware: list[str] = Field(
        description="Per workload: what it buys or rents (count, model, GPUs; rental hours)."
    )
    proven_optimal: bool = Field(
        default=True, description="False when the time ran out first (a feasible plan)."
    )

    def asked(self) -> str:
        """What this point asked of the plan, in a few characters."""
        if self.time_cap_h is not None:
            cap = self.time_cap_h
            return f"runs <= {cap:,.0f} h" if cap >= 100 else f"runs <= {cap:.3g} h"
        return f"deadlines x {self.deadline_factor if self.deadline_factor is not None else 1:g}"


class Frontier(OutModel):
    kind: Literal["frontier"] = Field(default="frontier", description="What this result is.")
    schema_version: int = schema_version_field()
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
    stop_reason: list[str] = Field(
        default_factory=list,
        description="Why no faster point exists: per workload, what bounds its fastest option "
        "(an offer's instance limit, the sites' racks, the global batch, the layout search), a "
        "budget or rack conflict, the time limit, or --points.",
    )
    status: Literal["optimal", "feasible", "infeasible", "timeout"] = Field(
        default="optimal",
        description="optimal: every point proven; feasible: some point not proven optimal or "
        "some factor timed out; infeasible: no factor admits a plan (proven); timeout: no "
        "plan found and some factor timed out.",
    )
