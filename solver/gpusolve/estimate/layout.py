"""A parallel layout (`Layout`), the answer for one (`ConfigEstimate`), and what the two
kinds of workload share.

The physics of each kind lives in its own module: `training.py` (memory, the step time from
its parts, checkpoints) and `serving.py` (continuous batching, prefill and decode);
`evaluation.py` dispatches between them. The answer says whether the layout fits, how fast it
runs, what limits it, and — in `reasons` — every reason it cannot be used, as sentences with
numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import get_args

from gpusolve.estimate.checkpoint import CheckpointSize
from gpusolve.estimate.goodput import Goodput
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.loadsim import LoadFigures
from gpusolve.estimate.memory import SHARDING_STAGE, MemoryBreakdown
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import StepBreakdown
from gpusolve.estimate.units import GB, SECONDS_PER_HOUR
from gpusolve.models.catalog import Card
from gpusolve.models.params import Params
from gpusolve.models.requirements import Checkpointing, Sharding, Workload

SHARDINGS: tuple[str, ...] = get_args(Sharding)
CHECKPOINTINGS: tuple[str, ...] = get_args(Checkpointing)
BOTTLENECKS = ("compute", "memory_bandwidth", "communication")


@dataclass(frozen=True)
class Layout:
    """A parallel layout.

    Training: tp × cp × pp × dp GPUs over `nodes` servers (Megatron's rank order: TP
    innermost, then CP, DP, PP outermost); `vp` virtual stages per pipeline rank
    (interleaved 1F1B); `ep` splits MoE experts over data-parallel ranks (inside or across
    nodes); `sharding` of the data-parallel states (ZeRO-1 is the distributed optimizer);
    `checkpointing` (activation recomputation); `micro_batch` sequences per GPU per micro-step,
    `grad_accum` micro-steps per optimizer step (global batch = micro_batch × grad_accum × dp
    sequences); `sequence_parallel` (Megatron SP, on by default whenever tp > 1).
    Inference: `replicas` independent copies of tp × pp GPUs each (dp = 1; an MoE replica may
    spread its experts over each stage's tp ranks, `ep` = tp, and attend data-parallel over
    them, `attention_dp`, moeserve.py); `micro_batch` is
    the number of sequences each replica decodes concurrently; `sequences` (when set) the
    sequences over all replicas, each replica filled to `micro_batch` in turn, so the last
    one may run a smaller batch (a concurrency of 64 on replicas of 10 is 6 × 10 + 4).
    """

    nodes: int
    tp: int
    pp: int
    dp: int
    sharding: str = "ddp"
    checkpointing: str = "none"
    micro_batch: int = 1
    grad_accum: int = 1
    replicas: int = 1
    ep: int = 1
    sequence_parallel: bool = True
    vp: int = 1
    cp: int = 1
    sequences: int | None = None
    # Inference, MoE: the tp ranks of a stage attend their own sequences with whole attention
    # weights (attention data-parallel) and hold E/ep whole experts each (ep = tp).
    attention_dp: bool = False

    @property
    def replica_shape(self) -> tuple[int, int, int, bool]:
        """A serving replica's (tp, pp, ep, attention_dp)."""
        return self.tp, self.pp, self.ep, self.attention_dp

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp * self.replicas

    @property
    def zero_stage(self) -> int:
        return SHARDING_STAGE[self.sharding]

    @property
    def sequence_parallel_on(self) -> bool:
        """Sequence parallelism only exists with tensor parallelism."""
        return self.sequence_parallel and self.tp > 1

    @property
    def total_sequences(self) -> int:
        """Inference: sequences decoded at once over all replicas."""
        full = self.replicas * self.micro_batch
        return full if self.sequences is None else min(full, self.sequences)

    def replica_batches(self) -> list[tuple[int, int]]:
        """Inference: (replicas, sequences each) groups: those filled to `micro_batch`, the
        one partly filled, those left idle (each group only where it has replicas)."""
        full, rest = divmod(self.total_sequences, self.micro_batch)
        idle = self.replicas - full - (1 if rest else 0)
        groups = [(full, self.micro_batch), (1 if rest else 0, rest), (idle, 0)]
        return [(n, b) for n, b in groups if n > 0]

    def describe(self, inference: bool = False) -> str:
        """A short human label, e.g. 'TP2 PP1 DP4 zero2 ckpt=none mb=2x8'."""
        if inference:
            moe = f" EP{self.ep}" if self.ep > 1 else ""
            moe += " attention-DP" if self.attention_dp else ""
            head = f"{self.replicas} x TP{self.tp} PP{self.pp}{moe}, "
            if self.total_sequences == self.replicas * self.micro_batch:
                return head + f"{self.micro_batch} seq/replica"
            fill = " + ".join(f"{n} x {b}" if n > 1 else str(b) for n, b in self.replica_batches())
            return head + f"{self.total_sequences} seq ({fill})"
        extra = "".join(
            f" {name}{value}"
            for name, value in (("VP", self.vp), ("CP", self.cp), ("EP", self.ep))
            if value > 1
        )
        sp = " no-SP" if self.tp > 1 and not self.sequence_parallel else ""
        return (
            f"TP{self.tp} PP{self.pp} DP{self.dp}{extra} {self.sharding}{sp} "
            f"ckpt={self.checkpointing} mb={self.micro_batch}x{self.grad_accum}"
        )


@dataclass(frozen=True)
class DisaggPools:
    """Disaggregated serving (disaggregation.py fills it): a prefill pool and a decode pool,
    the KV cache of each prompt sent from one to the other."""

    prefill_tp: int
    prefill_replicas: int
    decode_tp: int
    decode_replicas: int
    prefill_utilisation: float  # of the prefill pool, at the service's request rate
    kv_transfer_s: float  # one prompt's KV cache from its prefill to its decode GPUs
    link: str  # what carries it
    prefill_ttft_s: float  # the prompt's prefill alone, before queueing and the transfer
    queue_s: float  # mean wait for a prefill replica (M/D/1 at the pool's utilisation)
    one_server: bool = False  # both pools in one server (else each on servers of its own)
    gpus_per_node: int = 8
    prefill_pp: int = 1  # pipeline stages of a prefill replica (over servers when > 1 server)
    decode_pp: int = 1
    prefill_nodes: int = 0  # servers of each pool (0 prefill: in the decode pool's server)
    decode_nodes: int = 1
    # MoE: whole experts on each of a replica's ranks, attention data-parallel (moeserve.py).
    prefill_ep: int = 1
    decode_ep: int = 1
    prefill_attention_dp: bool = False
    decode_attention_dp: bool = False

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_tp * self.prefill_pp * self.prefill_replicas

    @property
    def decode_gpus(self) -> int:
        return self.decode_tp * self.decode_pp * self.decode_replicas


@dataclass(frozen=True)
class ServingFigures:
    """What a serving layout delivers per replica (serving.py fills it)."""

    batch: int  # sequences decoded concurrently per replica
    max_batch: int  # the most that memory and the latency targets allow
    mean_context: float  # live tokens per sequence the KV cache holds on average
    tpot_s: float  # time per output token each user sees
    ttft_s: float  # prefill of one prompt
    single_stream_tokens_per_s: float  # one sequence alone
    prefill_share: float  # of a replica's time, spent on prefill
    decode_step: dict[str, float]  # the decode step's parts, seconds
    batch_limit: str  # memory | tpot | engine (the scheduler's cap on running requests)
    disaggregated: DisaggPools | None = None  # separate prefill and decode pools
    comparison: str = ""  # why aggregated or disaggregated serving needs fewer GPUs here
    engine: str = "vllm"  # the engine whose scheduler sized the batch
    reserve: str = "mean"  # full | mean: the KV context a running request holds
    sequences: int = 0  # decoded at once over all replicas
    # (replicas, sequences each): the full replicas, the one partly filled, the idle ones
    replica_batches: tuple[tuple[int, int], ...] = ()
    load: LoadFigures | None = None  # percentiles and goodput at the workload's request rate


@dataclass(frozen=True)
class StageFigures:
    """One pipeline rank's memory (training): what it holds and its total."""

    rank: int
    layers: int  # transformer layers
    embedding: bool  # holds the input embedding
    head: bool  # holds the output layer and the loss
    memory: MemoryBreakdown


@dataclass(frozen=True)
class ConfigEstimate:
    """Everything the physics says about one (workload, hardware, layout)."""

    workload: str
    kind: str
    card: str
    hardware: str
    layout: Layout
    gpus: int
    nodes: int
    memory: MemoryBreakdown  # per GPU, bytes
    usable_memory_bytes: float  # what the device reports × (1 − headroom)
    card_memory_bytes: float  # what the device reports
    headroom: float
    fits: bool
    flops: float  # training: per run incl. recomputation; inference: per generated token
    model_flops: float  # training: 6·N·D + attention (PaLM's MFU numerator); inference 2·N
    time_to_train_s: float | None  # one run, None for inference
    step_time_s: float | None
    steps: int | None
    tokens_per_s: float  # training tokens/s, or generated tokens/s over all replicas
    mfu: float | None  # model FLOPs / (time × GPUs × peak): an output, never an input
    hfu: float | None  # FLOPs executed (recomputation included) / (time × GPUs × peak)
    comm_fraction: float  # exposed communication / step time
    step: StepBreakdown | None  # training: the step time's parts
    serving: ServingFigures | None
    checkpoint_bytes: float  # weights + optimizer state (training), weights (inference)
    checkpoint_weights_bytes: float
    checkpoint_stall_fraction: float
    bottleneck: str  # "compute" | "memory_bandwidth" | "communication"
    arithmetic_intensity: float  # FLOP per byte of the dominant kernel
    ridge_point: float | None  # card peak / memory bandwidth at the compute precision
    meets_deadline: bool  # one run within workload.deadline_hours; True without a deadline
    reasons: tuple[str, ...]  # why the layout cannot be used; empty = feasible
    notes: tuple[str, ...]  # observations that do not block it
    coarse: bool  # the shape was derived from params_b alone
    measured: bool  # a measured run (H12) set the throughput
    # How a measured run calibrated this estimate and how it was transferred to this card.
    calibration: tuple[str, ...] = ()
    # Training: every pipeline rank's memory (`memory` is the fullest one's).
    stages: tuple[StageFigures, ...] = ()
    # Training: the run with failures, restarts and planned overhead; `time_to_train_s` is
    # its total, `steady_time_s` the steady state it grows from.
    goodput: Goodput | None = None

    @property
    def steady_time_s(self) -> float | None:
        return self.goodput.steady_s if self.goodput is not None else self.time_to_train_s

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def memory_total_bytes(self) -> float:
        return self.memory.total_bytes

    @property
    def time_to_train_h(self) -> float | None:
        t = self.time_to_train_s
        return None if t is None else t / SECONDS_PER_HOUR

    @classmethod
    def build(
        cls,
        workload: Workload,
        arch: Arch,
        hw: Hardware,
        layout: Layout,
        params: Params,
        *,
        memory: MemoryBreakdown,
        flops: float,
        model_flops: float,
        step_time_s: float,
        tokens_per_s: float,
        comm_fraction: float,
        checkpoint: CheckpointSize,
        bottleneck: str,
        arithmetic_intensity: float,
        ridge_point: float,
        reasons: Iterable[str],
        notes: Iterable[str],
        measured: bool,
        time_to_train_s: float | None = None,
        steps: int | None = None,
        mfu: float | None = None,
        hfu: float | None = None,
        step: StepBreakdown | None = None,
        serving: ServingFigures | None = None,
        checkpoint_stall_fraction: float = 0.0,
        meets_deadline: bool = True,
        calibration: Iterable[str] = (),
        stages: tuple[StageFigures, ...] = (),
        goodput: Goodput | None = None,
    ) -> ConfigEstimate:
        """The one way training and serving make an estimate: whether `memory` fits the
        card's usable memory is judged here (a shortfall is the first reason); the figures a
        serving estimate lacks (training time, steps, MFU, the step, ...) default to absent."""
        usable = usable_memory_bytes(hw.card, params.headroom)
        fits = memory.total_bytes <= usable
        if not fits:
            shortfall = memory_reason(memory.total_bytes, usable, hw.card, params.headroom)
            reasons = [shortfall, *reasons]
        return cls(
            workload=workload.name,
            kind=workload.kind,
            card=hw.card.id,
            hardware=hw.label or hw.card.id,
            layout=layout,
            gpus=layout.gpus,
            nodes=layout.nodes,
            memory=memory,
            usable_memory_bytes=usable,
            card_memory_bytes=hw.card.reported_memory_bytes,
            headroom=params.headroom,
            fits=fits,
            flops=flops,
            model_flops=model_flops,
            time_to_train_s=time_to_train_s,
            step_time_s=step_time_s,
            steps=steps,
            tokens_per_s=tokens_per_s,
            mfu=mfu,
            hfu=hfu,
            comm_fraction=comm_fraction,
            step=step,
            serving=serving,
            checkpoint_bytes=checkpoint.full_bytes,
            checkpoint_weights_bytes=checkpoint.weights_bytes,
            checkpoint_stall_fraction=checkpoint_stall_fraction,
            bottleneck=bottleneck,
            arithmetic_intensity=arithmetic_intensity,
            ridge_point=ridge_point,
            meets_deadline=meets_deadline,
            reasons=tuple(reasons),
            notes=tuple(notes),
            coarse=arch.coarse,
            measured=measured,
            calibration=tuple(calibration),
            stages=stages,
            goodput=goodput,
        )


# ---------------------------------------------------------------- shared helpers


def gb(x: float) -> str:
    return f"{x / GB:.1f} GB"


def pct(x: float) -> str:
    """A share in per cent with one decimal, so '15.3%' never reads as the 15% threshold."""
    return f"{x:.1%}"


def usable_memory_bytes(card: Card, headroom: float) -> float:
    """What a workload may use: the memory the device reports, less the headroom (H29)."""
    return card.reported_memory_bytes * (1.0 - headroom)


def overhead_bytes(params: Params, gpus: int) -> float:
    """CUDA context and kernels, plus NCCL's buffers when GPUs talk to each other."""
    nccl = params.nccl_overhead_gb if gpus > 1 else 0.0
    return (params.runtime_overhead_gb + nccl) * GB


def memory_reason(total: float, usable: float, card: Card, headroom: float) -> str:
    return (
        f"needs {gb(total)} per GPU; {card.id} (reports {gb(card.reported_memory_bytes)}) "
        f"with {headroom:.0%} headroom gives {gb(usable)}"
    )


def structure_reasons(
    workload: Workload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> list[str]:
    """Why a layout cannot exist on this hardware and model, whatever the memory."""
    gpn = hw.gpus_per_node
    out: list[str] = []
    if layout.gpus > layout.nodes * gpn:
        out.append(
            f"the layout needs {layout.gpus} GPUs but {layout.nodes} node(s) of {gpn} "
            f"hold {layout.nodes * gpn}"
        )
    # Under attention data-parallel the stage's ranks only exchange tokens with their
    # experts (moeserve.py), which may cross the fabric.
    if layout.tp > gpn and not layout.attention_dp:
        out.append(
            f"TP {layout.tp} spans nodes of {gpn} GPUs; tensor parallelism needs the "
            "intra-node link (H08)"
        )
    if arch.heads % layout.tp and not layout.attention_dp:
        out.append(f"TP {layout.tp} does not divide the {arch.heads} attention heads")
    if layout.pp > arch.layers:
        out.append(f"PP {layout.pp} exceeds the {arch.layers} layers")
    # A split the user gives may leave a chunk with only the embedding or the loss (Llama 3
    # §3.3.2); pipeline.py checks that split itself.
    pipe = getattr(workload, "pipeline", None)
    chunks_needed = arch.layers + 2 if pipe is not None else arch.layers
    if layout.vp > 1 and (layout.pp < 2 or layout.pp * layout.vp > chunks_needed):
        out.append(
            f"{layout.vp} virtual stages need PP > 1 and at least one of the {arch.layers} "
            f"layers in each of the {layout.pp} x {layout.vp} chunks"
        )
    if layout.cp > 1 and workload.seq_len % (2 * layout.cp):
        out.append(
            f"CP {layout.cp} needs the sequence ({workload.seq_len}) in 2 x {layout.cp} "
            "equal chunks (load-balanced causal attention)"
        )
    # Training spreads experts over data-parallel ranks; serving over a stage's TP ranks
    # (moeserve.check_split).
    ep_split = arch.experts % layout.ep or layout.dp % layout.ep
    if workload.is_training and layout.ep > 1 and (not arch.is_moe or ep_split):
        out.append(f"EP {layout.ep} must divide both the experts ({arch.experts}) and DP")
    if layout.nodes > 1 and not params.allow_multi_node:
        out.append(f"the job spans {layout.nodes} nodes but multi-node jobs are disabled (H21)")
    if layout.nodes > params.max_nodes:
        out.append(f"{layout.nodes} nodes exceed the limit of {params.max_nodes} (H21)")
    spans = layout.nodes > 1 and (workload.is_training or layout.tp * layout.pp > gpn)
    if spans and hw.inter_node_gbps_per_gpu <= 0:
        out.append(f"{hw.label or hw.card.id} has no inter-node fabric; a job cannot span nodes")
    return out


def peak_flops(card: Card, precision: str, reasons: list[str]) -> float:
    """Peak FLOP/s at `precision`; a card without it is rejected (figures then use FP32)."""
    tflops = card.tflops_at(precision)
    if tflops is None:
        reasons.append(f"{card.id} has no {precision} tensor throughput in the catalogue")
        return card.tflops.fp32 * 1e12
    return tflops * 1e12


def measured_rate_per_gpu(workload: Workload, card: Card) -> float | None:
    """Tokens/s per GPU from a measured run on this card (samples × seq_len if needed)."""
    m = workload.measured_run
    if m is None or m.card != card.id:
        return None
    if m.tokens_per_s is not None:
        return m.tokens_per_s / m.gpus
    if m.samples_per_s is not None:
        return m.samples_per_s * workload.seq_len / m.gpus
    return None


def measured_memory(
    workload: Workload, hw: Hardware, gpus: int, memory: MemoryBreakdown, notes: list[str]
) -> MemoryBreakdown:
    """H12: a measured peak on this card and GPU count replaces a lower formula figure (the
    difference is booked as overhead, so the breakdown still sums to the total)."""
    m = workload.measured_run
    if m is None or m.peak_memory_gb is None or m.card != hw.card.id or m.gpus != gpus:
        return memory
    measured = m.peak_memory_gb * GB
    if measured <= memory.total_bytes:
        notes.append(
            f"measured peak {gb(measured)} per GPU is below the formula's "
            f"{gb(memory.total_bytes)}; the formula figure is kept"
        )
        return memory
    notes.append(f"measured peak {gb(measured)} per GPU replaces the formula's total (H12)")
    extra = measured - memory.total_bytes
    return replace(memory, overhead_bytes=memory.overhead_bytes + extra)
