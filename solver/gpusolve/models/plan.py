"""The output contract of `gpusolve plan`: one typed Plan rendered five ways."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PlanStatus = Literal["optimal", "feasible", "infeasible", "unknown"]


class OutModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CostBreakdown(OutModel):
    servers_capex: float = 0.0
    rack_rent: float = 0.0
    energy: float = 0.0
    bandwidth: float = 0.0
    cloud_rental: float = 0.0
    penalties: float = 0.0


class Cost(OutModel):
    capex: float
    monthly_opex: float
    tco: float
    currency: str
    horizon_months: int
    breakdown: CostBreakdown


class Parallel(OutModel):
    tp: int
    pp: int
    dp: int
    vp: int = Field(default=1, description="Virtual pipeline stages per rank (interleaved).")
    cp: int = Field(default=1, description="Context-parallel degree.")
    ep: int = Field(default=1, description="Expert-parallel degree (MoE).")
    sequence_parallel: bool = False
    zero_stage: int
    gradient_checkpointing: str
    micro_batch: int
    grad_accum: int


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
    card_memory_gb: float = Field(description="Memory the device reports, GB.")
    usable_memory_gb: float = Field(description="card_memory_gb × (1 − headroom), GB.")
    headroom: float
    time_to_train_h: float | None
    mfu: float | None = Field(default=None, description="Training: the MFU the step gives.")
    throughput: float = Field(description="Training tokens/s, or generated tokens/s for inference.")
    replicas: int = 1
    rental_hours: float = 0.0


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


class RuleFired(OutModel):
    rule: str
    source: str
    title: str
    workloads: list[str]


class Constraint(OutModel):
    name: str
    detail: str


class Alternative(OutModel):
    rank: int
    tco: float
    delta: float
    differs: str
    deployments: list[Deployment]


class Relaxation(OutModel):
    requirement: str
    detail: str
    suggestion: str | None = None


class Infeasibility(OutModel):
    reason: str
    conflicting: list[Relaxation] = Field(default_factory=list)
    workloads_without_candidates: dict[str, list[str]] = Field(default_factory=dict)


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


class Plan(OutModel):
    status: PlanStatus
    objective: str
    cost: Cost | None
    deployments: list[Deployment] = Field(default_factory=list)
    sites: list[Site] = Field(default_factory=list)
    binding: list[Constraint] = Field(default_factory=list)
    rules_fired: list[RuleFired] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    why_not: dict[str, list[str]] = Field(default_factory=dict)
    infeasibility: Infeasibility | None = None
    solver: SolverInfo
