"""The output contract of `gpusolve estimate --format json` (schema: estimate.schema.json).

GB means 10^9 bytes everywhere. Memory figures are per GPU unless the name says otherwise;
rule-of-thumb figures (H05, H30) are whole-model figures and are labelled as such.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import LazyOutModel, schema_version_field
from gpusolve.models.parts import GoodputOut, PoolSplits

Bottleneck = Literal["compute", "memory_bandwidth", "communication"]


class MemoryGB(LazyOutModel):
    """Memory on one GPU, GB (10^9 bytes); `total` is the sum of the other seven."""

    weights: float
    gathered_weights: float = Field(
        description="ZeRO-3/FSDP: parameters gathered for the layers being computed."
    )
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    overhead: float = Field(
        description="CUDA context and kernels, and NCCL buffers when GPUs communicate."
    )
    total: float


class StageOut(LazyOutModel):
    """Training: one pipeline rank's memory (the layout's memory is the fullest rank's)."""

    rank: int = Field(description="Pipeline rank, 0 = the first stage.")
    layers: int = Field(description="Transformer layers it holds (all its chunks).")
    embedding: bool = Field(description="Holds the input embedding.")
    head: bool = Field(description="Holds the output layer and the loss.")
    memory_gb: MemoryGB


class StepOut(LazyOutModel):
    """Training: one optimizer step's time on the slowest GPU, by cause (seconds)."""

    compute_s: float = Field(description="GEMMs, attention and streaming kernels.")
    recompute_s: float = Field(description="Activation recomputation.")
    tp_comm_s: float = Field(description="Exposed tensor-parallel collectives.")
    cp_comm_s: float = Field(description="Exposed context-parallel K/V exchange.")
    ep_comm_s: float = Field(description="Exposed expert-parallel all-to-alls.")
    pp_comm_s: float = Field(description="Pipeline stage-boundary sends.")
    bubble_s: float = Field(description="Pipeline fill and drain.")
    dp_comm_s: float = Field(description="Exposed data-parallel traffic.")
    optimizer_s: float = Field(description="The optimizer update.")
    step_s: float = Field(description="The sum of the parts above.")
    dp_comm_total_s: float = Field(description="Data-parallel traffic before overlap.")
    dp_link: str = Field(description="The link the data-parallel ring is bounded by.")


class DisaggOut(PoolSplits):
    """Disaggregated serving: the prefill pool, the decode pool and the KV transfer."""

    prefill_tp: int
    prefill_replicas: int
    decode_tp: int
    decode_replicas: int
    prefill_gpus: int
    decode_gpus: int
    prefill_utilisation: float = Field(description="Busy share of the prefill pool.")
    queue_ms: float = Field(description="Mean wait for a prefill replica (M/D/1).")
    kv_transfer_ms: float = Field(description="One prompt's KV cache, prefill to decode pool.")
    link: str = Field(description="The link the KV cache crosses.")
    prefill_pp: int = Field(default=1, description="Pipeline stages of a prefill replica.")
    decode_pp: int = Field(default=1, description="Pipeline stages of a decode replica.")
    prefill_nodes: int = Field(
        default=0, description="Servers of the prefill pool (0: in the decode pool's server)."
    )
    decode_nodes: int = Field(default=1, description="Servers of the decode pool.")


class LoadOut(LazyOutModel):
    """Percentiles and goodput at the workload's request rate (a seeded simulation of the
    engine's continuous batching on one replica, estimate/loadsim.py)."""

    request_rate: float = Field(description="Requests/s offered to the whole service.")
    replicas: int = Field(description="Replicas the arrivals are split over.")
    requests: int = Field(description="Requests simulated on one replica.")
    arrivals: str = Field(description="poisson | constant.")
    ttft_ms: list[float | None] = Field(
        description="TTFT P50, P90, P99 (queueing included), ms; None where requests were "
        "refused (a prompt larger than the KV cache)."
    )
    tpot_ms: list[float | None] = Field(description="TPOT P50, P90, P99, ms.")
    throughput_rps: float = Field(description="Completed requests/s over all replicas.")
    goodput_rps: float | None = Field(
        description="Requests/s whose TTFT and TPOT meet every SLA target (None: no SLA)."
    )
    meets_sla: bool = Field(description="Every stated percentile target met (True: none).")
    mean_running: float = Field(description="Requests in a replica's batch on average.")
    preemptions: int = Field(description="Requests preempted when the KV cache ran full.")
    kv_tokens: int = Field(description="KV cache of one replica, tokens.")


class ServingOut(LazyOutModel):
    """Inference: what one replica runs and delivers."""

    batch: int = Field(description="Sequences decoded together per replica.")
    max_batch: int = Field(description="The most that memory and the TPOT target allow.")
    batch_limit: str = Field(
        description="memory | tpot | engine (its cap on running requests): what bounds max_batch."
    )
    mean_context: float = Field(description="Mean live tokens per sequence in the KV cache.")
    tpot_ms: float = Field(description="Time per output token each user sees.")
    ttft_ms: float = Field(
        description="Prefill time of one mean prompt (disaggregated: plus the mean wait for a "
        "prefill replica and the KV transfer)."
    )
    single_stream_tokens_per_s: float = Field(description="One sequence decoding alone.")
    prefill_share: float = Field(description="Share of replica time spent on prefill.")
    decode_step_ms: dict[str, float] = Field(description="The decode step's parts, ms.")
    engine: str = Field(default="vllm", description="The serving engine sized for.")
    reserve: str = Field(default="mean", description="full | mean: KV a request holds.")
    disaggregated: DisaggOut | None = Field(
        default=None, description="Separate prefill and decode pools (None: aggregated)."
    )
    comparison: str = Field(
        default="", description="Why aggregated or disaggregated serving needs fewer GPUs."
    )
    sequences: int = Field(
        default=0, description="Sequences decoded at once over all (decode) replicas."
    )
    replica_batches: list[tuple[int, int]] = Field(
        default_factory=list,
        description="(replicas, sequences each): the replicas filled to `batch`, the one "
        "partly filled, the idle ones; tokens/s is the sum of each at its own batch.",
    )
    load: LoadOut | None = Field(
        default=None, description="At the workload's request_rate (None: no rate given)."
    )


class ArchOut(LazyOutModel):
    """The architecture the figures are computed for."""

    preset: str | None = Field(description="Preset name when the shape came from one.")
    params_b: float = Field(description="Parameters, billions (MoE: all experts).")
    active_params_b: float = Field(description="Parameters used per token, billions.")
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int = Field(description="MoE experts per layer (1 = dense).")
    active_experts: int
    mtp_depth: int = Field(
        default=0,
        description="Multi-token prediction modules this workload trains beside the output "
        "head (DeepSeek-V3 §2.2): the model's in pre-training and full fine-tuning; none for "
        "LoRA/QLoRA or serving.",
    )
    mtp_params_b: float = Field(
        default=0.0,
        description="Parameters of those modules, billions (outside `params_b`, as the "
        "model's publishers count them).",
    )
    coarse: bool = Field(
        description="True when only params_b was given and the shape is derived (coarse)."
    )
    derivation: str = Field(description="Where the shape came from.")
    assumptions: list[str] = Field(description="Fields filled in with stated defaults.")


class ThumbOut(LazyOutModel):
    """The documents' rules of thumb next to the formula (whole model, not per GPU)."""

    h30_class: str = Field(description="full fine-tune | LoRA | inference")
    h30_factor: float = Field(description="GB per billion parameters used (Params thumb factor).")
    h30_range: tuple[float, float] = Field(description="The documents' range for this class.")
    h30_gb: float = Field(description="Rule of thumb H30: params_b × factor, GB.")
    h05_low_gb: float | None = Field(description="Rule of thumb H05 low end (16 B/param), GB.")
    h05_high_gb: float | None = Field(description="Rule of thumb H05 high end (24 B/param), GB.")
    formula_whole_model_gb: float = Field(
        description="The formula's memory for the whole job on one GPU (no parallelism), GB."
    )
    formula_model_states_gb: float = Field(
        description="Of which weights + gradients + optimizer state, GB."
    )


class ConfigOut(LazyOutModel):
    """One parallel configuration on one card."""

    card: str
    hardware: str = Field(description="Server, cloud offer or generic node it was sized in.")
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    vp: int = Field(description="Virtual pipeline stages per rank (interleaved 1F1B).")
    cp: int = Field(description="Context-parallel degree (the sequence split).")
    ep: int = Field(description="Expert-parallel degree (MoE).")
    attention_dp: bool = Field(
        default=False,
        description="Serving an MoE model: each of a stage's ranks attends its own sequences "
        "(attention data-parallel), the tokens sent to their experts' ranks and back.",
    )
    sequence_parallel: bool
    replicas: int = Field(description="Inference: independent replicas of tp × pp GPUs.")
    zero_stage: int = Field(description="0 DDP, 1-2 ZeRO, 3 ZeRO-3 / FSDP.")
    sharding: str
    gradient_checkpointing: str
    micro_batch: int = Field(
        description="Training: sequences per GPU per micro-step; "
        "inference: sequences decoded at once per replica."
    )
    grad_accum: int
    memory_per_gpu_gb: MemoryGB
    card_memory_gb: float = Field(description="Memory the device reports, GB.")
    usable_memory_gb: float = Field(description="card_memory_gb × (1 − headroom), GB.")
    headroom: float
    fits: bool = Field(description="memory_per_gpu_gb.total ≤ usable_memory_gb.")
    feasible: bool = Field(description="Fits and no other reason blocks it (see reasons).")
    flops: float = Field(
        description="Training: FLOPs per run including recomputation; inference: FLOPs per "
        "generated token."
    )
    time_to_train_h: float | None = Field(
        description="One run, hours, failures and restarts included (goodput); null for inference."
    )
    steady_time_h: float | None = Field(
        default=None, description="One run at steady state, hours (training)."
    )
    goodput: GoodputOut | None = Field(default=None, description="Training: the time's parts.")
    stages: list[StageOut] = Field(
        default_factory=list, description="Training: memory of every pipeline rank."
    )
    tokens_per_s: float = Field(
        description="Training tokens/s, or generated tokens/s over all replicas."
    )
    mfu: float | None = Field(
        description="Model FLOPs (6·N·D + attention) over time × GPUs × peak (training)."
    )
    hfu: float | None = Field(description="As mfu, with recomputed FLOPs counted (training).")
    step: StepOut | None = Field(description="Training: the step time's parts.")
    serving: ServingOut | None = Field(description="Inference: batch, latency, prefill.")
    comm_fraction: float = Field(description="Exposed communication / step time.")
    checkpoint_gb: float = Field(
        description="Checkpoint with optimizer state (training) or weights (inference), GB."
    )
    checkpoint_weights_gb: float = Field(description="Weights-only checkpoint, GB.")
    checkpoint_stall_fraction: float = Field(
        description="Share of training time blocked by synchronous checkpoint saves."
    )
    bottleneck: Bottleneck
    arithmetic_intensity: float = Field(description="FLOP per byte of the dominant kernel.")
    ridge_point: float | None = Field(description="Card peak FLOP/s ÷ memory bandwidth.")
    meets_deadline: bool = Field(description="One run within deadline_hours (true if none).")
    measured: bool = Field(description="A measured run (H12) set the throughput.")
    calibration: list[str] = Field(
        default_factory=list,
        description="Which figures a measured run calibrated and how they were transferred to "
        "this card (estimate/calibration.py).",
    )
    reasons: list[str] = Field(description="Why the configuration cannot be used.")
    notes: list[str]


class WorkloadEstimate(LazyOutModel):
    name: str
    kind: str
    headroom: float = Field(description="Memory headroom kept free on every GPU (rules, H29).")
    precision: str
    optimizer: str
    tokens: float | None
    deadline_h: float | None
    arch: ArchOut
    thumb: ThumbOut
    fits_on: list[str] = Field(
        description="Catalogue cards with at least one feasible configuration."
    )
    configs: list[ConfigOut]
    rejections: list[str] = Field(description="Per card, why no configuration was feasible.")


class EstimateReport(LazyOutModel):
    kind: Literal["estimate"] = Field(default="estimate", description="What this result is.")
    schema_version: int = schema_version_field()
    units: str = Field(default="GB = 10^9 bytes; time in hours; FLOPs as plain numbers")
    mode: Literal["explicit", "search"] = Field(
        description="explicit: the one configuration given on the command line; search: "
        "the smallest feasible configurations per card."
    )
    workloads: list[WorkloadEstimate]
