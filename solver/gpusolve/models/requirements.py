"""What the user asks for: workloads, horizon, budgets, regions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpusolve.models.common import (
    Currency,
    Fraction,
    Identifier,
    PositiveFloat,
    StrictModel,
)

WorkloadKind = Literal["pretrain", "full_finetune", "lora", "qlora", "inference"]
ModelPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
Optimizer = Literal["adamw", "adamw_fp32", "adam_8bit", "sgd_momentum", "adafactor"]
Checkpointing = Literal["none", "selective", "full"]
Schedule = Literal["always", "day", "night"]
Objective = Literal["min-tco", "min-capex", "min-monthly", "max-throughput"]
Sharding = Literal["ddp", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_hybrid"]


class ModelShape(StrictModel):
    """A model by size, by architecture, or by a shipped preset name."""

    preset: str | None = Field(
        default=None, description="A shipped preset, e.g. llama-2-70b; shape fields override it."
    )
    params_b: PositiveFloat | None = Field(default=None, description="Parameters, billions.")
    layers: int | None = Field(default=None, ge=1)
    hidden: int | None = Field(default=None, ge=1)
    heads: int | None = Field(default=None, ge=1)
    kv_heads: int | None = Field(default=None, ge=1)
    ffn: int | None = Field(default=None, ge=1, description="Feed-forward inner size.")
    vocab: int | None = Field(default=None, ge=1)
    experts: int | None = Field(default=None, ge=1, description="MoE experts per layer.")
    active_experts: int | None = Field(default=None, ge=1, description="Experts per token.")
    active_params_b: PositiveFloat | None = Field(
        default=None, description="MoE parameters used per token, billions."
    )

    @model_validator(mode="after")
    def _known(self) -> ModelShape:
        has_arch = self.layers is not None and self.hidden is not None
        if self.preset is None and self.params_b is None and not has_arch:
            raise ValueError("give params_b, a preset, or the architecture (layers and hidden)")
        if self.kv_heads and self.heads and self.kv_heads > self.heads:
            raise ValueError("kv_heads cannot exceed heads")
        return self


class Lora(StrictModel):
    rank: int = Field(default=16, ge=1, le=4096)
    target_fraction: Fraction | None = Field(
        default=None,
        description="Trainable fraction of parameters; derived from rank and shape if absent.",
    )


class Measured(StrictModel):
    """A real short run (H12) that replaces assumptions."""

    card: Identifier
    gpus: int = Field(ge=1)
    tokens_per_s: PositiveFloat | None = None
    samples_per_s: PositiveFloat | None = None
    peak_memory_gb: PositiveFloat | None = None
    mfu: Fraction | None = None


class Workload(StrictModel):
    name: Identifier
    kind: WorkloadKind
    model: ModelShape
    precision: ModelPrecision = "bf16"
    optimizer: Optimizer = "adamw"
    sharding: Sharding | None = Field(
        default=None, description="Fix the data-parallel sharding; searched when absent."
    )
    seq_len: int = Field(default=2048, ge=1)
    micro_batch: int = Field(default=1, ge=1)
    global_batch: int | None = Field(default=None, ge=1, description="Sequences per step.")
    gradient_checkpointing: Checkpointing | None = Field(
        default=None, description="Fix activation recomputation; searched when absent."
    )
    flash_attention: bool = True
    tokens: PositiveFloat | None = Field(default=None, description="Tokens per training run.")
    runs: PositiveFloat = Field(default=1, description="Runs over the planning horizon.")
    deadline_hours: PositiveFloat | None = None
    schedule: Schedule = "always"
    latency_sensitive: bool = False
    regions: list[str] | None = Field(
        default=None, description="Allowed regions or cities for this workload only."
    )
    lora: Lora | None = None
    # Inference
    context_len: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    target_tokens_per_s: PositiveFloat | None = None
    measured: Measured | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> Workload:
        if self.kind == "inference":
            if self.target_tokens_per_s is None and self.concurrency is None:
                raise ValueError("an inference workload needs target_tokens_per_s or concurrency")
        elif self.tokens is None:
            raise ValueError(f"a {self.kind} workload needs tokens (tokens per run)")
        return self


class Budget(StrictModel):
    capex_max: PositiveFloat | None = None
    monthly_max: PositiveFloat | None = None


class Regions(StrictModel):
    allowed: list[str] | None = None
    preferred: list[str] | None = None


class Requirements(StrictModel):
    schema_: str | None = Field(default=None, alias="$schema")
    currency: Currency = "CNY"
    horizon_months: int = Field(default=36, ge=1, le=120)
    objective: Objective = "min-tco"
    budget: Budget = Field(default_factory=Budget)
    headroom: Fraction | None = Field(
        default=None, description="Memory headroom kept free on every GPU (rules default 0.2)."
    )
    utilisation: Fraction = Field(
        default=0.7, description="Average power draw as a fraction of peak, for energy cost."
    )
    regions: Regions = Field(default_factory=Regions)
    workloads: list[Workload] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> Requirements:
        seen: set[str] = set()
        for w in self.workloads:
            if w.name in seen:
                raise ValueError(f"workload name {w.name!r} is used twice")
            seen.add(w.name)
        return self
