"""What the user asks for: workloads, horizon, budgets, regions."""

from __future__ import annotations

import datetime
import itertools
import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, TypeAdapter, field_validator, model_validator

from gpusolve.models.catalog import Card
from gpusolve.models.common import (
    Currency,
    Fraction,
    Identifier,
    LocatedValueError,
    PositiveFloat,
    RegionList,
    StrictModel,
)
from gpusolve.models.inventory import Owned
from gpusolve.models.periods import (
    MAX_DEMAND_MULTIPLE,
    MAX_MONTH,
    MIN_DEMAND_MULTIPLE,
    DemandMultiple,
    Growth,
    Period,
    Periods,
    demand_range,
    split_horizon,
)

WorkloadKind = Literal["pretrain", "full_finetune", "lora", "qlora", "inference"]
ModelPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
Optimizer = Literal["adamw", "adamw_fp32", "adam_8bit", "sgd_momentum", "adafactor"]
Checkpointing = Literal["none", "selective", "full"]
Schedule = Literal["always", "day", "night"]
Objective = Literal["min-tco", "min-capex", "min-monthly", "max-throughput"]
Sharding = Literal["ddp", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_hybrid"]
PipelineSchedule = Literal["1f1b", "interleaved", "dualpipe"]
# The training code's stack (estimate/stacks.py says what each keeps and streams).
TrainingFramework = Literal["megatron", "hf", "torchtune", "litgpt"]
# The Linear layers of a block a LoRA adapter can sit on (PEFT's target_modules in Llama names).
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
# The frontier reports' memory savings (estimate/memory.py `Savings` says where each is from).
MemorySaving = Literal[
    "recompute_norms",
    "recompute_up_projections",
    "recompute_activation_function",
    "fp8_activations",
    "bf16_moments",
    "offload_optimizer",
]
# Reports name it for inference too, where no optimizer runs (their output kept its shape).
DEFAULT_OPTIMIZER: Optimizer = "adamw"

# Range checks where quantities enter. Each bound is far outside any real
# workload but small enough that the estimator's searches stay bounded and every money
# and time figure, once scaled to integers for CP-SAT, stays inside int64.
MAX_PARAMS_B = 1e5  # 100 T parameters: ~150x the largest published dense or MoE model
# 10^5 parameters: a tenth of the smallest published language models (TinyStories-1M,
# Eldan & Li 2023, arXiv:2305.07759 §3: hidden 64); smaller is a typo, not a model.
MIN_PARAMS_B = 1e-4
MIN_HIDDEN = 64  # the same models' hidden size
MAX_LAYERS = 10_000  # published models have <= ~200 layers
MAX_WIDTH = 1_048_576  # 2^20: hidden/ffn widths of published models are <= ~10^5
MAX_HEADS = 65_536
MAX_VOCAB = 10_000_000  # largest published vocabularies are ~256 k
# Routed experts: DeepSeek-V3 has 256, Qwen3-MoE 128; 4,096 leaves room for fine-grained
# MoE research while keeping the expert-parallel layout search small (10^6 never returned).
MAX_EXPERTS = 4_096
MAX_GPUS = 1_000_000
MAX_SEQ_LEN = 100_000_000  # 10^8 tokens: 100x the longest published context windows
MAX_BATCH = 100_000_000
MAX_CONCURRENCY = 100_000_000
MAX_TOKENS = 1e15  # tokens per run: ~30x the ~36 T of the largest published pretraining runs
MAX_TOKENS_PER_S = 1e12
MAX_MEMORY_GB = 1e6
MIN_RUNS = 1e-3  # a thousandth of a run over the horizon; less is a typo
MAX_RUNS = 1e6  # about one run every 2 minutes over the longest (120-month) horizon
MIN_DEADLINE_HOURS = 1 / 3600  # one second: shorter is a typo, not a deadline
MAX_HOURS = 120 * 730.5  # the longest horizon (120 months) in hours
MIN_LATENCY_MS = 1e-3
MAX_LATENCY_MS = 3.6e6  # an hour per token is no longer a latency target
MAX_BANDWIDTH_MBPS = 1e8  # 100 Tbit/s: far beyond any one site's internet uplink
MAX_MONEY = 1e15  # budgets, in the run's currency: ~1,000x a frontier cluster's capex
# A margin above 100 % buys for another target, not against the estimate's error band.
MAX_MARGIN = 1.0


class ModelShape(StrictModel):
    """A model by size, by architecture, or by a shipped preset name."""

    preset: str | None = Field(
        default=None, description="A shipped preset, e.g. llama-2-70b; shape fields override it."
    )
    params_b: PositiveFloat | None = Field(
        default=None, ge=MIN_PARAMS_B, le=MAX_PARAMS_B, description="Parameters, billions."
    )
    layers: int | None = Field(default=None, ge=1, le=MAX_LAYERS)
    hidden: int | None = Field(default=None, ge=MIN_HIDDEN, le=MAX_WIDTH)
    heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    kv_heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    ffn: int | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="Feed-forward inner size."
    )
    vocab: int | None = Field(default=None, ge=1, le=MAX_VOCAB)
    head_dim: int | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="Per-head width when it is not hidden/heads."
    )
    gated_ffn: bool | None = Field(
        default=None, description="SwiGLU-style MLP (3 matrices) instead of GeLU (2)."
    )
    tied_embeddings: bool | None = Field(
        default=None, description="The LM head reuses the input embedding (GPT, OPT)."
    )
    experts: int | None = Field(
        default=None, ge=1, le=MAX_EXPERTS, description="MoE routed experts per layer."
    )
    active_experts: int | None = Field(
        default=None, ge=1, le=MAX_EXPERTS, description="Routed experts per token."
    )
    shared_experts: int | None = Field(
        default=None,
        ge=0,
        le=MAX_EXPERTS,
        description="MoE experts every token visits (DeepSeek, Qwen-MoE).",
    )
    expert_ffn: int | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Inner size of one expert's MLP (default: ffn).",
    )
    dense_layers: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LAYERS,
        description="Leading layers with a dense MLP in an MoE model.",
    )
    routing_node_limit: int | None = Field(
        default=None,
        ge=1,
        le=MAX_EXPERTS,
        description="MoE: most nodes one token is dispatched to (DeepSeek-V3: 4), each once.",
    )
    kv_lora_rank: int | None = Field(
        default=None,
        ge=1,
        le=MAX_WIDTH,
        description="Multi-head latent attention (DeepSeek MLA): compressed K/V width; the "
        "KV cache holds this plus rope_head_dim per token and layer.",
    )
    q_lora_rank: int | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="MLA query compression."
    )
    rope_head_dim: int | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="MLA decoupled RoPE width."
    )
    v_head_dim: int | None = Field(
        default=None, ge=1, le=MAX_WIDTH, description="MLA value head width."
    )
    active_params_b: PositiveFloat | None = Field(
        default=None,
        ge=MIN_PARAMS_B,
        le=MAX_PARAMS_B,
        description="MoE parameters used per token, billions.",
    )
    mtp_depth: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LAYERS,
        description="Multi-token prediction modules trained with the model (DeepSeek-V3 §2.2: "
        "D = 1): each adds a transformer block, a 2h x h projection and a pass through the "
        "shared output head, on the pipeline rank that holds the head. Full training only; "
        "0 turns it off.",
    )

    @model_validator(mode="after")
    def _known(self) -> ModelShape:
        has_arch = self.layers is not None and self.hidden is not None
        if self.preset is None and self.params_b is None and not has_arch:
            raise ValueError("give params_b, a preset, or the architecture (layers and hidden)")
        if self.kv_heads and self.heads and self.kv_heads > self.heads:
            raise ValueError("kv_heads cannot exceed heads")
        if self.kv_heads and self.heads and self.heads % self.kv_heads:
            raise LocatedValueError(
                ("kv_heads",),
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads}): each "
                "key-value head serves a whole group of query heads",
            )
        if self.hidden and self.heads and self.head_dim is None and self.hidden % self.heads:
            raise LocatedValueError(
                ("heads",),
                f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}): each head "
                "gets hidden / heads of the width (give head_dim when it differs)",
            )
        if self.active_experts and self.experts and self.active_experts > self.experts:
            raise ValueError("active_experts cannot exceed experts")
        if self.dense_layers is not None and self.layers and self.dense_layers > self.layers:
            raise ValueError("dense_layers cannot exceed layers")
        return self


class Lora(StrictModel):
    rank: int = Field(default=16, ge=1, le=4096)
    target_fraction: Fraction | None = Field(
        default=None,
        gt=0,  # nothing trainable is not a fine-tune
        description="Trainable fraction of parameters; derived from rank and shape if absent.",
    )
    targets: list[LoraTarget] | None = Field(
        default=None,
        min_length=1,
        description="Linear layers with an adapter (q, k, v, o, gate, up, down); all of "
        "them if absent (QLoRA's and PEFT's all-linear). Sets what the backward pass keeps.",
    )
    dropout: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="LoRA dropout (PEFT's default 0). Above 0 each adapter keeps its own "
        "dropped-out copy of its input and a mask (Qwen's and LitGPT's scripts use 0.05).",
    )


class Pipeline(StrictModel):
    """How the pipeline is cut and scheduled (estimate/pipeline.py). Without it: layers split
    evenly, 1F1B (interleaved when the layout has virtual stages)."""

    schedule: PipelineSchedule | None = Field(
        default=None,
        description="1f1b, interleaved (needs virtual stages) or dualpipe (DeepSeek-V3: "
        "each rank holds two stages, PP + 1 micro-batches in flight).",
    )
    first_stage_layers: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LAYERS,
        description="Transformer layers on the first stage (it also holds the embedding).",
    )
    last_stage_layers: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LAYERS,
        description="Transformer layers on the last stage (it also holds the output layer).",
    )
    layers_per_stage: list[Annotated[int, Field(ge=0, le=MAX_LAYERS)]] | None = Field(
        default=None,
        min_length=1,
        description="Transformer layers on every stage, first to last (sets PP).",
    )

    @model_validator(mode="after")
    def _one_way(self) -> Pipeline:
        if self.layers_per_stage is not None and (
            self.first_stage_layers is not None or self.last_stage_layers is not None
        ):
            raise ValueError(
                "give either layers_per_stage or first_stage_layers/last_stage_layers, not both"
            )
        return self


class Goodput(StrictModel):
    """Your own figures for the time a run loses beyond steady state (estimate/goodput.py
    says where the defaults come from)."""

    failures_per_gpu_hour: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Job-stopping interruptions per GPU-hour (default: Llama 3's 419 in "
        "54 days on 16,384 GPUs).",
    )
    restart_minutes: float | None = Field(
        default=None,
        ge=0,
        le=MAX_HOURS * 60,
        description="Detection, rescheduling and restart per interruption, before the "
        "checkpoint reload (which is computed).",
    )
    checkpoint_interval_minutes: PositiveFloat | None = Field(
        default=None,
        le=MAX_HOURS * 60,
        description="Minutes between checkpoints (default: the rules' interval in steps).",
    )
    overhead_share: Fraction | None = Field(
        default=None,
        lt=1,
        description="Evaluation, ramp-up and other planned time, as a share of the "
        "steady-state time.",
    )


class Measured(StrictModel):
    """A real short run (H12) that calibrates the physics (estimate/calibration.py): the
    achievable compute fraction of the card's family and the activation-memory estimate,
    then used on every card."""

    card: Identifier
    gpus: int = Field(ge=1, le=MAX_GPUS)
    tokens_per_s: PositiveFloat | None = Field(
        default=None,
        le=MAX_TOKENS_PER_S,
        description="Training tokens/s of the whole run (all its GPUs).",
    )
    samples_per_s: PositiveFloat | None = Field(
        default=None,
        le=MAX_TOKENS_PER_S,
        description="Sequences/s of the whole run (times seq_len = tokens/s).",
    )
    peak_memory_gb: PositiveFloat | None = Field(
        default=None,
        le=MAX_MEMORY_GB,
        description="Peak memory per GPU held by the training process, GB (10^9 bytes): "
        "torch.cuda.max_memory_reserved, or nvidia-smi's used memory less the CUDA context.",
    )
    peak_allocated_gb: PositiveFloat | None = Field(
        default=None,
        le=MAX_MEMORY_GB,
        description="torch.cuda.max_memory_allocated per GPU, GB (information).",
    )
    # An MFU of 0 means the run did no work; times divide by it.
    mfu: Fraction | None = Field(
        default=None, gt=0, description="Model FLOPs utilisation against the card's dense peak."
    )
    seq_len: int | None = Field(
        default=None,
        ge=1,
        description="Sequence length of the measured run (default: the workload's).",
    )
    micro_batch: int | None = Field(
        default=None,
        ge=1,
        description="Sequences per GPU per micro-step (default: the workload's).",
    )
    tp: int = Field(default=1, ge=1, description="Tensor-parallel degree of the measured run.")
    pp: int = Field(default=1, ge=1, description="Pipeline-parallel degree of the measured run.")
    sharding: Sharding | None = Field(
        default=None,
        description="Sharding of the measured run (default: the workload's, else ddp).",
    )
    checkpointing: Checkpointing | None = Field(
        default=None,
        description="Recomputation of the measured run (default: the workload's, else none).",
    )
    profile: str | None = Field(
        default=None, description="An nvidia-smi dmon or CSV log of the run (gpusolve profile)."
    )
    _card: Card | None = PrivateAttr(default=None)
    # estimate/calibration.py memoises its result here, per parameter set (Params, hashable).
    _calibrations: dict[object, object] = PrivateAttr(default_factory=dict)
    _profile_notes: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _layout(self) -> Measured:
        if self.gpus % (self.tp * self.pp):
            raise ValueError(f"gpus ({self.gpus}) must be a multiple of tp x pp")
        return self

    def bind_card(self, card: Card) -> None:
        """Attach the catalogue's card (the loader does this) so that calibration can read
        its peak and family when the plan evaluates another card."""
        self._card = card

    @property
    def bound_card(self) -> Card | None:
        return self._card

    @property
    def calibrations(self) -> dict[object, object]:
        return self._calibrations

    def attach_profile(self, notes: tuple[str, ...]) -> None:
        """What `gpusolve profile` read in the run's log (the loader attaches it)."""
        self._profile_notes = notes

    @property
    def profile_notes(self) -> tuple[str, ...]:
        return self._profile_notes


class WorkloadBase(StrictModel):
    """What every workload states, whatever its kind: the model, where and when it runs."""

    name: Identifier
    # Each kind's model narrows this to its own names; `Workload` chooses the model by it.
    kind: WorkloadKind
    model: ModelShape
    precision: ModelPrecision = "bf16"
    seq_len: int = Field(default=2048, ge=1, le=MAX_SEQ_LEN)
    micro_batch: int = Field(default=1, ge=1, le=MAX_BATCH)
    flash_attention: bool = True
    runs: PositiveFloat = Field(
        default=1, ge=MIN_RUNS, le=MAX_RUNS, description="Runs over the planning horizon."
    )
    dataset_gb: float | None = Field(
        default=None,
        ge=0,
        le=1e9,
        description="Training data kept on the site's storage, GB (with the checkpoints).",
    )
    deadline_hours: PositiveFloat | None = Field(default=None, ge=MIN_DEADLINE_HOURS, le=MAX_HOURS)
    schedule: Schedule = "always"
    split: bool = Field(
        default=True,
        description="Let the plan put part of the work on owned servers (a service's base "
        "load, or some of a training workload's runs) and the rest on a rental (the burst), "
        "where that is cheaper or the only way; false keeps the workload on one platform.",
    )
    latency_sensitive: bool = False
    regions: RegionList | None = Field(
        default=None, description="Allowed regions or cities for this workload only."
    )
    bandwidth_mbps: PositiveFloat | None = Field(
        default=None,
        le=MAX_BANDWIDTH_MBPS,
        description="Internet bandwidth the workload needs at its colocation site while it "
        "runs, Mbps (users, data ingest). A site's bandwidth is the larger of its offer's "
        "included Mbps and the sum of the demands placed there; each Mbps beyond the included "
        "is priced at the offer's bandwidth_price_per_mbps_month.",
    )
    utilisation: Fraction | None = Field(
        default=None,
        gt=0,
        description="Average power draw of owned servers while this workload runs, as a "
        "fraction of peak (a lightly loaded service draws less); default: the requirements' "
        "utilisation. Idle hours draw idle power either way.",
    )
    start_month: int = Field(
        default=0,
        ge=0,
        lt=MAX_MONTH,
        description="With `periods`: the month the workload starts (0 = the plan's start).",
    )
    end_month: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MONTH,
        description="With `periods`: the month the workload stops (default: the horizon).",
    )
    demand_growth: Growth | None = Field(
        default=None,
        description="With `periods`: demand grows by `factor` every `every_months` from the "
        "start month (inference: target_tokens_per_s or concurrency; training: runs).",
    )
    demand_by_period: list[DemandMultiple] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MONTH,
        description="With `periods`: demand per period as multiples of the stated figure, "
        "one per period (the last repeats).",
    )
    margin: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MARGIN,
        allow_inf_nan=False,
        description="Capacity bought above this workload's target, as a fraction: serving "
        "delivers target x (1 + margin) tokens/s (or users at once), a training run finishes "
        "by deadline / (1 + margin). Default: the requirements' margin, else the validation "
        "suite's error gate for its kind (0.15 training, 0.20 serving; candidates/margin.py).",
    )
    switch_cost: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MONEY,
        allow_inf_nan=False,
        description="With `periods`: what moving this workload to another platform (card) or "
        "site between periods costs, in the run's currency (copying weights and data, "
        "re-deploying, validating). Default in CNY: 20,000 (an estimate: one engineer-week; "
        "plan/phased/inputs.py); other currencies: 0 unless stated.",
    )
    throughput_weight: PositiveFloat = Field(
        default=1.0,
        le=1000,
        description="max-throughput only: how much this workload counts. The objective adds "
        "weight x (throughput / the best throughput this workload reaches on any of its "
        "options), so tokens/s of different models are never added.",
    )

    @model_validator(mode="after")
    def _timing(self) -> WorkloadBase:
        if self.end_month is not None and self.end_month <= self.start_month:
            raise ValueError(
                f"end_month ({self.end_month}) must be after start_month ({self.start_month})"
            )
        if self.demand_growth is not None and self.demand_by_period is not None:
            raise ValueError("give demand_growth or demand_by_period, not both")
        return self

    @property
    def is_phased(self) -> bool:
        """States when it runs or how its demand moves (fields that need `periods`)."""
        return (
            self.start_month > 0
            or self.end_month is not None
            or self.demand_growth is not None
            or self.demand_by_period is not None
        )

    @property
    def is_training(self) -> bool:
        """Trains weights (pretrain or a fine-tune) rather than serving them."""
        return isinstance(self, TrainingBase)

    @property
    def measured_run(self) -> Measured | None:
        """The measured run calibrating a training workload; None for any other."""
        return self.measured if isinstance(self, TrainingBase) else None


class TrainingBase(WorkloadBase):
    """A run that updates weights: a number of tokens, an optimiser, a sharding."""

    optimizer: Optimizer = DEFAULT_OPTIMIZER
    sharding: Sharding | None = Field(
        default=None, description="Fix the data-parallel sharding; searched when absent."
    )
    global_batch: int | None = Field(
        default=None, ge=1, le=MAX_BATCH, description="Sequences per step."
    )
    gradient_checkpointing: Checkpointing | None = Field(
        default=None, description="Fix activation recomputation; searched when absent."
    )
    dropout: bool = Field(
        default=False,
        description="Hidden and attention dropout (GPT-3-era recipes); Llama-era has none.",
    )
    # Optional in the type so that a missing value gets the message below, not pydantic's.
    tokens: PositiveFloat | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="Tokens per training run."
    )
    measured: Measured | None = None
    pipeline: Pipeline | None = None
    memory_savings: list[MemorySaving] = Field(
        default_factory=list,
        description="Memory savings the run uses (DeepSeek-V3 §3.2-3.3, ZeRO-Offload).",
    )
    goodput: Goodput | None = None
    framework: TrainingFramework | None = Field(
        default=None,
        description="The training code: megatron (Megatron-LM/NeMo, fused kernels), hf "
        "(Hugging Face Trainer/accelerate with PEFT, eager; DeepSpeed or FSDP via sharding) or "
        "torchtune (compiled) or litgpt (Lightning, eager). Default: megatron for "
        "pretraining, hf for fine-tunes.",
    )

    @model_validator(mode="after")
    def _needs_tokens(self) -> TrainingBase:
        if self.tokens is None:
            raise ValueError(f"a {self.kind} workload needs tokens (tokens per run)")
        return self

    @property
    def tokens_per_run(self) -> float:
        """Tokens of one run; the validator guarantees it is given."""
        assert self.tokens is not None
        return float(self.tokens)


class TrainingWorkload(TrainingBase):
    """Pretraining or a full fine-tune: every weight is trained."""

    kind: Literal["pretrain", "full_finetune"]


class FineTuneWorkload(TrainingBase):
    """A parameter-efficient fine-tune (LoRA, or QLoRA on a 4-bit frozen base)."""

    kind: Literal["lora", "qlora"]
    lora: Lora | None = None


# A request rate's bounds: a thousandth of a request per second is a typo for a batch job;
# 10^6 requests/s is far beyond any one service the planner sizes.
MIN_REQUEST_RATE = 1e-3
MAX_REQUEST_RATE = 1e6
MAX_HISTOGRAM_BINS = 64


class LengthDistribution(StrictModel):
    """How request lengths vary around their mean: a standard deviation (lengths drawn
    log-normal with the workload's mean, as chat traces' heavy tails are) or a histogram of
    (tokens, weight) bins, whose weighted mean is the mean."""

    stdev: float | None = Field(
        default=None,
        ge=0,
        le=MAX_SEQ_LEN,
        description="Standard deviation of the length, tokens (log-normal around the mean).",
    )
    histogram: list[tuple[Annotated[int, Field(ge=1, le=MAX_SEQ_LEN)], PositiveFloat]] | None = (
        Field(
            default=None,
            min_length=1,
            max_length=MAX_HISTOGRAM_BINS,
            description="Bins as [tokens, weight]: a request has that many tokens with "
            "probability weight / sum of weights.",
        )
    )

    @model_validator(mode="after")
    def _one_way(self) -> LengthDistribution:
        if (self.stdev is None) == (self.histogram is None):
            raise ValueError("give either stdev or histogram")
        return self

    def mean(self) -> float | None:
        """The histogram's weighted mean (None for a spread around the workload's mean)."""
        if self.histogram is None:
            return None
        total = sum(w for _, w in self.histogram)
        return sum(n * w for n, w in self.histogram) / total


class PercentileSla(StrictModel):
    """Latency targets as percentiles over requests (what vLLM's and SGLang's serving
    benchmarks print): TTFT from arrival to the first token, queueing included; TPOT over a
    request's later tokens, (finish - first token) / (output - 1)."""

    ttft_p50_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
    ttft_p90_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
    ttft_p99_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
    tpot_p50_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
    tpot_p90_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
    tpot_p99_ms: PositiveFloat | None = Field(default=None, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)

    @model_validator(mode="after")
    def _some_target(self) -> PercentileSla:
        if not self.targets():
            raise ValueError("give at least one target, e.g. ttft_p99_ms or tpot_p90_ms")
        return self

    def targets(self) -> list[tuple[str, int, float]]:
        """(metric, percentile, ms) of every stated target: ("ttft", 99, 500.0)."""
        out = []
        for metric in ("ttft", "tpot"):
            for q in (50, 90, 99):
                value = getattr(self, f"{metric}_p{q}_ms")
                if value is not None:
                    out.append((metric, q, float(value)))
        return out


class InferenceWorkload(WorkloadBase):
    """A service: a throughput or concurrency target under latency limits."""

    kind: Literal["inference"]
    context_len: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SEQ_LEN,
        description="Longest prompt + output a request may reach, tokens.",
    )
    prompt_tokens: int | None = Field(
        default=None,
        ge=0,
        le=MAX_SEQ_LEN,
        description="Mean prompt length, tokens (prefill work, KV cache).",
    )
    output_tokens: int | None = Field(
        default=None, ge=1, le=MAX_SEQ_LEN, description="Mean generated tokens per request."
    )
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    target_tokens_per_s: PositiveFloat | None = Field(
        default=None,
        le=MAX_TOKENS_PER_S,
        description="Generated tokens/s the service must deliver in total.",
    )
    tpot_ms: PositiveFloat | None = Field(
        default=None,
        ge=MIN_LATENCY_MS,
        le=MAX_LATENCY_MS,
        description="Largest time per output token a user may see, ms.",
    )
    ttft_ms: PositiveFloat | None = Field(
        default=None,
        ge=MIN_LATENCY_MS,
        le=MAX_LATENCY_MS,
        description="Largest time to first token (one prompt's prefill), ms.",
    )
    kv_cache_precision: Literal["fp32", "bf16", "fp16", "fp8", "int8"] | None = Field(
        default=None,
        description="Element format of the KV cache; default: fp8 when serving in fp8, fp32 "
        "in fp32, else 16-bit.",
    )
    quant_group_size: int | None = Field(
        default=None,
        ge=8,
        le=8192,
        description="Weights per scale group for int4 weight-only quantisation (GPTQ/AWQ "
        "default 128).",
    )
    # Engine and scheduler (estimate/engines.py says what each engine does by default).
    engine: str | None = Field(
        default=None,
        pattern=r"^(vllm|sglang|trtllm)(@[0-9A-Za-z.+-]{1,40})?$",
        description="Serving engine whose scheduler and memory reserve size the batch: vllm, "
        "sglang or trtllm, optionally with the release you run (vllm@0.11); default vllm. "
        "The estimate names the release whose defaults it used and warns where another "
        "was asked for.",
    )
    reserve: Literal["full", "mean"] | None = Field(
        default=None,
        description="KV cache a running request holds: full = prompt + output reserved at "
        "admission (TensorRT-LLM's GUARANTEED_NO_EVICT), mean = its live context, paged on "
        "demand (vLLM, SGLang); default: the engine's.",
    )
    kv_memory_fraction: float | None = Field(
        default=None,
        gt=0.1,
        le=1.0,
        description="The engine's memory share (vLLM gpu_memory_utilization, SGLang "
        "mem_fraction_static, TensorRT-LLM kv_cache_free_gpu_mem_fraction); default: the "
        "engine's.",
    )
    disaggregation: Literal["auto", "off", "only"] = Field(
        default="auto",
        description="Separate prefill and decode GPU pools: auto = size both ways and let "
        "cost choose, off = aggregated only, only = disaggregated only.",
    )
    # Traffic as requests arrive (estimate/loadsim.py simulates the engine's scheduler).
    request_rate: PositiveFloat | None = Field(
        default=None,
        ge=MIN_REQUEST_RATE,
        le=MAX_REQUEST_RATE,
        description="Requests per second the service receives (with prompt_tokens and "
        "output_tokens); without target_tokens_per_s or concurrency, the tokens/s target is "
        "request_rate x output_tokens.",
    )
    arrivals: Literal["poisson", "constant"] = Field(
        default="poisson",
        description="How requests arrive at request_rate: poisson (independent users, as "
        "vLLM's and SGLang's benchmarks send them) or constant (evenly spaced).",
    )
    prompt_lengths: LengthDistribution | None = Field(
        default=None,
        description="How prompt lengths vary (absent: every prompt is prompt_tokens long).",
    )
    output_lengths: LengthDistribution | None = Field(
        default=None,
        description="How output lengths vary (absent: every output is output_tokens long).",
    )
    sla: PercentileSla | None = Field(
        default=None,
        description="Latency percentiles the service must meet at request_rate; replicas are "
        "sized so that the simulated percentiles meet them.",
    )

    @model_validator(mode="before")
    @classmethod
    def _means_from_histograms(cls, data: Any) -> Any:
        """A histogram states its mean: it fills prompt_tokens/output_tokens when absent, and
        a request rate without another demand asks for request_rate x output tokens/s."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for field, lengths in (
            ("prompt_tokens", "prompt_lengths"),
            ("output_tokens", "output_lengths"),
        ):
            spread = out.get(lengths)
            bins = spread.get("histogram") if isinstance(spread, dict) else None
            if out.get(field) is None and isinstance(bins, list) and bins:
                try:
                    total = sum(float(w) for _, w in bins)
                    mean = sum(float(n) * float(w) for n, w in bins) / total
                except (TypeError, ValueError, ZeroDivisionError):
                    continue  # the field's own validation says what is wrong
                out[field] = max(1, round(mean))
        rate, output = out.get("request_rate"), out.get("output_tokens")
        if (
            out.get("target_tokens_per_s") is None
            and out.get("concurrency") is None
            and isinstance(rate, (int, float))
            and isinstance(output, (int, float))
            and rate > 0
            and output > 0
        ):
            out["target_tokens_per_s"] = float(rate) * float(output)
        return out

    @model_validator(mode="after")
    def _needs_demand(self) -> InferenceWorkload:
        self._check_rate()
        if self.target_tokens_per_s is None and self.concurrency is None:
            raise ValueError(
                "an inference workload needs target_tokens_per_s, concurrency or request_rate "
                "(with output_tokens)"
            )
        return self

    def _check_rate(self) -> None:
        """A rate needs the lengths it is made of; percentiles need a rate; a histogram's
        mean and the stated mean agree."""
        if self.request_rate is not None:
            for field in ("prompt_tokens", "output_tokens"):
                if getattr(self, field) is None:
                    raise LocatedValueError(
                        ("request_rate",),
                        f"a request rate needs {field} (the mean length; or a histogram in "
                        f"{field.split('_')[0]}_lengths)",
                    )
        if self.sla is not None and self.request_rate is None:
            raise LocatedValueError(
                ("sla",), "percentile targets need request_rate (the load they hold at)"
            )
        for field, lengths in (
            ("prompt_tokens", "prompt_lengths"),
            ("output_tokens", "output_lengths"),
        ):
            spread = getattr(self, lengths)
            mean = spread.mean() if spread is not None else None
            stated = getattr(self, field)
            if (
                mean is not None
                and stated is not None
                and abs(mean - stated) > max(1.0, 0.01 * mean)
            ):
                raise LocatedValueError(
                    (lengths, "histogram"),
                    f"the histogram's mean is {mean:,.1f} tokens but {field} is {stated:,}: "
                    f"leave {field} out (the histogram sets it) or make them agree",
                )

    def demand_scaled(self, factor: float) -> dict[str, object]:
        """The fields of this service at `factor` times its traffic (a model_copy update):
        more traffic is more users at once, so its tokens/s, concurrency and request rate
        grow together; each user's speed and the latency targets stay."""
        update: dict[str, object] = {}
        if self.target_tokens_per_s is not None:
            update["target_tokens_per_s"] = self.target_tokens_per_s * factor
        if self.concurrency is not None:
            update["concurrency"] = max(1, math.ceil(self.concurrency * factor))
        if self.request_rate is not None:
            update["request_rate"] = self.request_rate * factor
        return update


# A workload that trains weights, of any training kind.
Training = TrainingWorkload | FineTuneWorkload

# One model per kind, chosen by `kind`: a field of another kind is an unknown field.
Workload = Annotated[
    TrainingWorkload | FineTuneWorkload | InferenceWorkload, Field(discriminator="kind")
]
WORKLOAD_KINDS: tuple[type[WorkloadBase], ...] = (
    TrainingWorkload,
    FineTuneWorkload,
    InferenceWorkload,
)
_WORKLOAD_ADAPTER: TypeAdapter[Workload] = TypeAdapter(Workload)


def make_workload(data: Mapping[str, Any] | None = None, /, **fields: Any) -> Workload:
    """The workload of `kind` built from its fields, as the requirements file gives them."""
    return _WORKLOAD_ADAPTER.validate_python({**(data or {}), **fields})


class Budget(StrictModel):
    capex_max: PositiveFloat | None = Field(default=None, le=MAX_MONEY)
    monthly_max: PositiveFloat | None = Field(default=None, le=MAX_MONEY)
    total_max: PositiveFloat | None = Field(
        default=None,
        le=MAX_MONEY,
        description=(
            "Cap on everything spent over the horizon: capex (servers, network, storage) "
            "plus rack rent, energy, bandwidth and cloud rentals; no residual value credited."
        ),
    )
    capex_by_year: list[Annotated[PositiveFloat, Field(le=MAX_MONEY)]] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="With `periods`: capex allowed per fiscal year, year 0 first (months "
        "0-11, 12-23, ...); years past the list are unbounded.",
    )


class Regions(StrictModel):
    allowed: RegionList | None = Field(
        default=None, description="Regions or cities the plan may use (absent: anywhere)."
    )
    preferred: RegionList | None = None


class Network(StrictModel):
    """The compute fabric the plan buys for jobs across servers."""

    oversubscription: float = Field(
        default=1.0,
        ge=1.0,
        le=64.0,
        description="Leaf oversubscription of the fabric the plan sizes: 1 = non-blocking "
        "(as many leaf ports up to the spines as down to servers), 2 = twice as many down. "
        "Fewer spines and links; what crosses the spine gets 1/oversubscription of the "
        "bandwidth.",
    )


# A scenario's multipliers: far outside any plausible band, small enough that every scaled
# figure stays inside the ranges the catalogue and the workloads already enforce.
MAX_SCENARIO_FACTOR = 100.0
# Probabilities are read as written; their sum may miss 1 by rounding only.
PROBABILITY_TOLERANCE = 1e-6


class ScenarioPrices(StrictModel):
    """Multipliers on the catalogue's prices in one scenario."""

    servers: PositiveFloat = Field(
        default=1.0, le=MAX_SCENARIO_FACTOR, description="Server purchase prices."
    )
    cloud: PositiveFloat = Field(
        default=1.0, le=MAX_SCENARIO_FACTOR, description="Cloud prices per instance-hour."
    )
    power: PositiveFloat = Field(
        default=1.0, le=MAX_SCENARIO_FACTOR, description="Colocation power price per kWh."
    )


# A scenario's `efficiency:` key for every card, and its `demand:` key for every workload.
SCENARIO_ALL = "all"


class Scenario(StrictModel):
    """One way the future may turn out: the purchase is decided once for all
    scenarios; rentals and layouts may differ per scenario."""

    name: Identifier
    probability: Fraction
    efficiency: dict[Identifier, PositiveFloat] = Field(
        default_factory=dict,
        description="Achieved compute and memory bandwidth as a multiple of the model's, per "
        "card id, or `all` for every card (e.g. {all: 0.8}: 20 % below the estimate).",
    )
    prices: ScenarioPrices = Field(default_factory=ScenarioPrices)
    demand: PositiveFloat | dict[Identifier, PositiveFloat] = Field(
        default=1.0,
        description="Multiplier on each workload's demand: tokens per run (training), "
        "target_tokens_per_s or concurrency (inference); one number or per workload name.",
    )
    unavailable: list[Identifier] = Field(
        default_factory=list,
        description="Card ids that can be neither bought nor rented in this scenario (since "
        "the purchase serves every scenario, the plan then buys none of them).",
    )

    @field_validator("efficiency", "demand")
    @classmethod
    def _factors_in_range(cls, value: float | dict[str, float]) -> float | dict[str, float]:
        factors = value.values() if isinstance(value, dict) else [value]
        if any(f > MAX_SCENARIO_FACTOR for f in factors):
            raise ValueError(f"multipliers must be at most {MAX_SCENARIO_FACTOR:g}")
        return value


class VatRates(StrictModel):
    """Value-added tax added to the catalogue's prices (taken as net of VAT). Defaults are
    China's general rates: 13% on goods (servers, network, storage, electricity) and 6% on
    modern services (colocation, bandwidth, cloud rental) (财政部 税务总局 海关总署公告2019年
    第39号; 财税〔2016〕36号)."""

    goods: Fraction = Field(
        default=0.13, description="On purchases (servers, network, storage) and energy."
    )
    services: Fraction = Field(
        default=0.06, description="On rack rent, set-up fees, bandwidth and cloud rental."
    )


class ResalePoint(StrictModel):
    """One point of a resale curve: what a buyer pays for a server `month` months after its
    purchase, as a share of its purchase price."""

    month: int = Field(ge=0, le=240, description="Months after the purchase.")
    fraction: Fraction = Field(description="Resale price as a share of the purchase price.")


class Finance(StrictModel):
    """How the TCO treats money beyond the purchase and running prices."""

    residual_value: bool = Field(
        default=False,
        description="Credit what the owned servers would fetch if sold at the end of the "
        "horizon: shown as its own line beside the TCO (never inside it), and subtracted in "
        "the objective the plan minimises. The value follows resale_curve when given, else "
        "straight-line book value (useful_life_months, salvage_fraction). Off by default: "
        "accelerators' resale prices fall faster than book value, and no published curve is "
        "reliable enough to assume one.",
    )
    resale_curve: list[ResalePoint] | None = Field(
        default=None,
        min_length=1,
        description="Resale price over time as points (month, fraction of the purchase "
        "price), linear between them, from (0, 1) to the first; the last point must reach "
        "the horizon. E.g. secondary-market figures for datacentre GPUs (your broker's or "
        "a published index); used only when residual_value is true.",
    )
    useful_life_months: int | None = Field(
        default=None,
        ge=1,
        le=240,
        description="Months over which a server's book value falls to the salvage fraction "
        "(residual_value without resale_curve); default 60 (optimize/finance.py, with its "
        "source).",
    )
    salvage_fraction: Fraction | None = Field(
        default=None,
        lt=1,
        description="Share of the price a server keeps at the end of its useful life; default "
        "0.05 (optimize/finance.py).",
    )
    discount_rate: Fraction | None = Field(
        default=None,
        description="Your cost of capital a year, for the cash view's present value (NPV); "
        "default the terms file's (catalog/finance/terms.yaml: the 1-year LPR, a floor). "
        "With financing: optimise, the plan also values financed servers' payments at their "
        "present value at this rate (unset: their nominal sum).",
    )
    financing: Literal["cash", "lease", "instalments", "cheapest", "optimise"] = Field(
        default="cash",
        description="How purchases are paid. cash, lease, instalments, cheapest: a view over "
        "the plan (the cash view pays every purchase in cash on the payment terms, by a "
        "finance lease or instalments of catalog/finance/terms.yaml, or per line whichever "
        "costs least at present value); the plan itself pays cash. optimise: the plan "
        "chooses, per server model and site, how many servers to finance with each offer of "
        "the terms file: where the capex or monthly cap binds, or, with discount_rate, "
        "where an offer costs less at present value; the TCO counts the interest, the capex "
        "cap the down payments, the monthly cap the instalments (single plans; a schedule "
        "pays cash).",
    )
    payment_channel: str | None = Field(
        default=None,
        description="Payment terms of a purchase (a key of payment_terms in "
        "catalog/finance/terms.yaml, e.g. vendor-direct); default the file's default_channel.",
    )

    @field_validator("resale_curve")
    @classmethod
    def _months_increase(cls, value: list[ResalePoint] | None) -> list[ResalePoint] | None:
        months = [p.month for p in value or []]
        for a, b in itertools.pairwise(months):
            if b <= a:
                raise ValueError(
                    f"resale_curve months must increase: month {b} follows month {a}; "
                    "list the points in order, one per month"
                )
        return value

    vat: VatRates | None = Field(
        default=None,
        description="Add VAT to every price (catalogue prices are taken as net); `vat: {}` "
        "uses China's 13% / 6%.",
    )
    spares: Literal["none", "n+1"] = Field(
        default="none",
        description="n+1: buy one spare server per (server model, site) used, hosted and "
        "powered (idle) with the others.",
    )


class Requirements(StrictModel):
    schema_: str | None = Field(default=None, alias="$schema")
    currency: Currency = "CNY"
    horizon_months: int = Field(default=36, ge=1, le=120)
    start: str | None = Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2}$",
        description="The plan's first day (month 0), YYYY-MM-DD: servers ordered then are "
        "delivered on it plus their lead time, and the plan says on which day. Absent: "
        "weeks after order.",
    )
    objective: Objective = "min-tco"
    budget: Budget = Field(default_factory=Budget)
    headroom: Fraction | None = Field(
        default=None,
        lt=1,  # a headroom of the whole memory leaves nothing to run in
        description="Memory headroom kept free on every GPU (rules default 0.2).",
    )
    utilisation: Fraction = Field(
        default=0.7,
        gt=0,  # a server that draws no power is not running anything
        description="Average power draw as a fraction of peak, for energy cost.",
    )
    regions: Regions = Field(default_factory=Regions)
    network: Network = Field(default_factory=Network)
    market: Literal["cn", "global"] | None = Field(
        default=None,
        description="Where the hardware is bought and used. cn: cards restricted for export "
        "to China are not bought (renting inside China stays possible). Default: cn when "
        "every allowed region is in China, else global.",
    )
    allow_restricted: list[Identifier] = Field(
        default_factory=list,
        description="Card (or server) ids that may be bought in market cn although restricted: "
        "stock already owned, or a compliant channel your legal team approved.",
    )
    margin: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MARGIN,
        allow_inf_nan=False,
        description="Capacity bought above every workload's target unless the workload sets "
        "its own (serving: target x (1 + margin); training: deadline / (1 + margin)). "
        "Default: the validation suite's error gate per kind (0.15 training, 0.20 serving).",
    )
    workloads: list[Workload] = Field(min_length=1)
    finance: Finance = Field(default_factory=Finance)
    owned: Owned = Field(
        default_factory=Owned,
        description="Servers and racks the team already owns (an inventory): used first, "
        "never priced in the TCO; the plan adds only what the workloads need beyond them.",
    )
    periods: Periods | None = Field(
        default=None,
        description="Procurement over time: purchases, racks and rentals decided per period "
        "(e.g. {length_months: 3} for quarters), with demand per period, catalogue price "
        "trends, availability and lead times. Absent: one decision at month 0.",
    )
    scenarios: list[Scenario] | None = Field(
        default=None,
        min_length=1,
        description="Plans that hold under uncertainty: named scenarios with probabilities "
        "summing to 1. What is bought is decided once for all; rentals per scenario. A "
        "scenario named `nominal` is the plan's reference; else the requirements as written.",
    )

    @field_validator("start", mode="before")
    @classmethod
    def _start_is_a_day(cls, value: object) -> object:
        # YAML reads an unquoted 2027-01-04 as a date; the plan keeps it as its ISO text.
        if isinstance(value, datetime.date):
            return value.isoformat()
        if isinstance(value, str):
            datetime.date.fromisoformat(value)  # a day that exists, or a located error
        return value

    @property
    def start_day(self) -> datetime.date | None:
        return datetime.date.fromisoformat(self.start) if self.start is not None else None

    @field_validator("scenarios")
    @classmethod
    def _scenarios_sum_to_one(cls, value: list[Scenario] | None) -> list[Scenario] | None:
        if value is None:
            return value
        names = [s.name for s in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"scenario name {twice[0]!r} is used twice")
        total = sum(s.probability for s in value)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            listed = " + ".join(f"{s.probability:g}" for s in value)
            raise ValueError(
                f"scenario probabilities must sum to 1, these sum to {total:g} ({listed}); "
                "adjust them"
            )
        return value

    @model_validator(mode="after")
    def _resale_curve_reaches_horizon(self) -> Requirements:
        curve = self.finance.resale_curve
        if curve and curve[-1].month < self.horizon_months:
            raise ValueError(
                f"finance.resale_curve ends at month {curve[-1].month}, before the horizon "
                f"({self.horizon_months} months): add a point at or after month "
                f"{self.horizon_months}"
            )
        return self

    @model_validator(mode="after")
    def _periods_fit(self) -> Requirements:
        timed = [w.name for w in self.workloads if w.is_phased]
        if self.periods is None:
            if timed:
                raise ValueError(
                    f"workload {timed[0]!r} states when it runs or how its demand grows: add "
                    "`periods: {length_months: N}` to plan over time"
                )
            if self.budget.capex_by_year is not None:
                raise ValueError("budget.capex_by_year needs `periods: {length_months: N}`")
            return self
        if timed and self.periods.length_months >= self.horizon_months:
            raise ValueError(
                f"workload {timed[0]!r} states when it runs or how its demand grows, but "
                f"periods of {self.periods.length_months} months leave one period: make them "
                "shorter than the horizon"
            )
        if self.scenarios is not None and self.periods.length_months < self.horizon_months:
            raise ValueError("`periods` and `scenarios` cannot be combined yet: drop one")
        periods = split_horizon(self.horizon_months, self.periods.length_months)
        for i, w in enumerate(self.workloads):
            if w.start_month >= self.horizon_months:
                raise ValueError(
                    f"workload {w.name!r} starts at month {w.start_month}, at or after the "
                    f"horizon ({self.horizon_months} months)"
                )
            demand_problem(("workloads", i), w, periods)
        return self

    @property
    def phased(self) -> bool:
        """Plans over more than one period (one period is the single plan)."""
        return self.periods is not None and self.periods.length_months < self.horizon_months

    @model_validator(mode="after")
    def _unique_names(self) -> Requirements:
        seen: set[str] = set()
        for w in self.workloads:
            if w.name in seen:
                raise ValueError(f"workload name {w.name!r} is used twice")
            seen.add(w.name)
        return self


def _demand_limits(w: Workload) -> list[tuple[str, float, float]]:
    """The figures a workload's demand multiplies: (field, value, its most)."""
    if isinstance(w, InferenceWorkload):
        figures = [
            ("target_tokens_per_s", w.target_tokens_per_s, MAX_TOKENS_PER_S),
            ("concurrency", w.concurrency, MAX_CONCURRENCY),
        ]
        return [(n, float(v), most) for n, v, most in figures if v is not None]
    return [("runs", w.runs, MAX_RUNS)]


def demand_problem(at: tuple[str | int, ...], w: Workload, periods: tuple[Period, ...]) -> None:
    """Raise, located at the field, when a workload's demand over the periods leaves what the
    plan can be sized for: more per-period figures than periods (the extras would be
    ignored), a multiple beyond the bounds, or a grown figure beyond its field's range."""
    if w.demand_by_period is not None and len(w.demand_by_period) > len(periods):
        raise LocatedValueError(
            (*at, "demand_by_period", len(periods)),
            f"{len(w.demand_by_period)} demand figures for {len(periods)} periods: one per "
            "period at most (the last repeats); remove the extra ones or shorten the periods",
        )
    where = (*at, "demand_by_period") if w.demand_by_period is not None else (*at, "demand_growth")
    low, high = demand_range(
        w.demand_growth, w.demand_by_period, periods, (w.start_month, w.end_month)
    )
    if low < MIN_DEMAND_MULTIPLE or high > MAX_DEMAND_MULTIPLE:
        extreme = low if low < MIN_DEMAND_MULTIPLE else high
        raise LocatedValueError(
            where,
            f"demand reaches {extreme:.3g} times the stated figure within the horizon; "
            f"expected between {MIN_DEMAND_MULTIPLE:g} and {MAX_DEMAND_MULTIPLE:g} times "
            "(a demand that moves further is another workload: state it with its own "
            "start_month)",
        )
    for name, value, most in _demand_limits(w):
        if value * high > most:
            raise LocatedValueError(
                where,
                f"{name} {value:g} grows to {value * high:.3g}, beyond its range (at most "
                f"{most:g})",
            )
