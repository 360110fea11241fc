"""Output parts that both an estimate and a plan carry: a training run's goodput and how a
disaggregated service's pools split an MoE model. Apart from models/estimate.py so that a
plan builds only these, not every estimate output model, at start-up."""

from __future__ import annotations

from pydantic import Field

from gpusolve.models.common import LazyOutModel


class GoodputOut(LazyOutModel):
    """Training: one run's time beyond steady state (estimate/goodput.py), hours."""

    steady_h: float = Field(description="Steps × step time + checkpoint stalls.")
    overhead_h: float = Field(description="Evaluation, ramp-up and other planned time.")
    evaluation_h: float = Field(
        default=0.0, description="Of overhead_h: the stack's default evaluation passes."
    )
    rampup_h: float = Field(default=0.0, description="Of overhead_h: the batch-size ramp-up.")
    extra_saves_h: float = Field(
        description="Checkpoint saves beyond the steady state's (a shorter interval)."
    )
    lost_work_h: float = Field(description="Work redone since the last checkpoint.")
    restart_h: float = Field(description="Detection, rescheduling and checkpoint reloads.")
    total_h: float = Field(description="What the run takes and what plans budget.")
    goodput: float = Field(description="steady_h / total_h.")
    failures: float = Field(description="Expected interruptions over one run.")
    failures_per_gpu_hour: float
    checkpoint_interval_min: float
    optimal_interval_min: float | None = Field(
        description="Young's interval √(2·save/λ) for comparison; null without failures."
    )
    restart_each_min: float = Field(description="One restart, the checkpoint reload included.")
    source: str = Field(description="Where the failure rate comes from.")
    gpu_hours_steady: float = Field(description="GPUs × steady_h.")
    gpu_hours: float = Field(description="GPUs × total_h: what plans budget.")


class PoolSplits(LazyOutModel):
    """How each disaggregated pool's replicas share an MoE model (estimate/moeserve.py)."""

    prefill_ep: int = Field(default=1, description="Expert-parallel degree of a prefill replica.")
    decode_ep: int = Field(default=1, description="Expert-parallel degree of a decode replica.")
    prefill_attention_dp: bool = Field(
        default=False, description="Prefill replicas attend data-parallel (MoE)."
    )
    decode_attention_dp: bool = Field(
        default=False, description="Decode replicas attend data-parallel (MoE)."
    )
