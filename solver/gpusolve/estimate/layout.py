"""One workload on one hardware type in one parallel layout: `evaluate`.

This is where the pieces meet: memory per GPU (memory.py), FLOPs and time (compute.py),
communication (comm.py), checkpoints (checkpoint.py). The result, `ConfigEstimate`, says
whether the layout fits, how fast it runs, what limits it, and — in `reasons` — every
reason it cannot be used, as sentences with numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpusolve.estimate.checkpoint import (
    checkpoint_stall,
    inference_checkpoint,
    training_checkpoint,
)
from gpusolve.estimate.comm import Links, StepComm, training_comm
from gpusolve.estimate.compute import (
    compute_precision,
    decode_step,
    memory_bandwidth_bytes_per_s,
    peak_flops_per_s,
    recompute_flops_per_token,
    training_flops_per_token,
    training_intensity,
)
from gpusolve.estimate.memory import (
    SHARDING_STAGE,
    MemoryBreakdown,
    ModelStates,
    Parallel,
    adapter_state_bytes,
    frozen_base_bytes,
    full_training_state_bytes,
    inference_activations_bytes,
    is_fp32_training,
    kv_bytes_per_element,
    kv_cache_bytes,
    lora_params,
    training_activations_bytes,
    training_states,
    weights_bytes,
)
from gpusolve.estimate.shapes import Arch, resolve_arch
from gpusolve.estimate.units import GB, GBIT_BYTES_PER_S, SECONDS_PER_HOUR
from gpusolve.models.catalog import Card, CloudOffer, Server
from gpusolve.models.requirements import Workload
from gpusolve.params import Params

SHARDINGS = ("ddp", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_hybrid")
CHECKPOINTINGS = ("none", "selective", "full")
BOTTLENECKS = ("compute", "memory_bandwidth", "communication")

# PCIe x16 bidirectional GB/s by generation (catalog-facts: Gen3 ≈ 32, Gen4 ≈ 64, Gen5 ≈ 128).
PCIE_X16_BIDIR_GBS = {3: 32.0, 4: 64.0, 5: 128.0, 6: 256.0}


def pcie_peer_bidir_gbs(card: Card) -> float:
    """Peer bandwidth of a card without a GPU link: half the x16 figure, the cautious
    effective value the shipped servers use (GPUs share switch uplinks and cross sockets)."""
    return PCIE_X16_BIDIR_GBS.get(card.pcie_gen, 32.0) / 2


@dataclass(frozen=True)
class Hardware:
    """One server SKU or cloud instance type, as the physics sees it."""

    card: Card
    gpus_per_node: int
    intra_node_bandwidth_gbs: float  # per GPU, bidirectional GB/s (NVLink/IF/HCCS, or PCIe)
    inter_node_gbps_per_gpu: float  # per GPU share of the node's fabric, Gbit/s (0 = none)
    storage_write_gbs: float
    label: str = ""  # server or offer id, for messages

    @classmethod
    def from_server(cls, server: Server, card: Card) -> Hardware:
        return cls(
            card=card,
            gpus_per_node=server.gpus,
            intra_node_bandwidth_gbs=server.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=(
                0.0 if server.fabric.kind == "none" else server.fabric.total_gbps / server.gpus
            ),
            storage_write_gbs=server.storage_write_gbs,
            label=server.id,
        )

    @classmethod
    def from_cloud(cls, offer: CloudOffer, card: Card) -> Hardware:
        return cls(
            card=card,
            gpus_per_node=offer.gpus_per_instance,
            intra_node_bandwidth_gbs=offer.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=(
                0.0 if offer.fabric == "none" else offer.fabric_gbps / offer.gpus_per_instance
            ),
            storage_write_gbs=offer.storage_write_gbs,
            label=offer.id,
        )

    @classmethod
    def generic(cls, card: Card, gpus_per_node: int = 8) -> Hardware:
        """A card with no server in the catalogue: `gpus_per_node` cards on their own peer
        link (or PCIe), no inter-node fabric, NVMe-class 2 GB/s checkpoint storage."""
        return cls(
            card=card,
            gpus_per_node=gpus_per_node,
            intra_node_bandwidth_gbs=card.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=0.0,
            storage_write_gbs=2.0,
            label=f"{card.id} x{gpus_per_node} (generic)",
        )

    def links(self) -> Links:
        """Per-GPU one-direction bytes/s (bidirectional figures halved)."""
        intra = self.intra_node_bandwidth_gbs or pcie_peer_bidir_gbs(self.card)
        return Links(intra / 2 * 1e9, self.inter_node_gbps_per_gpu * GBIT_BYTES_PER_S)


@dataclass(frozen=True)
class Layout:
    """A parallel layout.

    Training: tp × pp × dp GPUs over `nodes` servers; `sharding` of the data-parallel
    states; `checkpointing` (activation recomputation); `micro_batch` sequences per GPU per
    micro-step, `grad_accum` micro-steps per optimizer step (global batch =
    micro_batch × grad_accum × dp sequences). `ep` splits MoE experts over data-parallel
    ranks; `sequence_parallel` (Megatron SP, on by default whenever tp > 1).
    Inference: `replicas` independent copies of tp × pp GPUs each (dp = 1);
    `micro_batch` is the number of sequences each replica decodes concurrently.
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

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.replicas

    @property
    def zero_stage(self) -> int:
        return SHARDING_STAGE[self.sharding]

    def describe(self, inference: bool = False) -> str:
        """A short human label, e.g. 'TP2 PP1 DP4 zero2 ckpt=none mb=2x8'."""
        if inference:
            return f"{self.replicas} x TP{self.tp} PP{self.pp}, {self.micro_batch} seq/replica"
        return (
            f"TP{self.tp} PP{self.pp} DP{self.dp} {self.sharding} "
            f"ckpt={self.checkpointing} mb={self.micro_batch}x{self.grad_accum}"
        )


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
    capacity_bytes: float  # card memory × (1 − headroom)
    card_memory_bytes: float
    headroom: float
    fits: bool
    flops: float  # training: per run incl. recomputation; inference: per generated token
    model_flops: float  # training: 6·N·D (4·N·D LoRA); inference: 2·N_active per token
    time_to_train_s: float | None  # one run, None for inference
    step_time_s: float | None
    steps: int | None
    tokens_per_s: float  # training tokens/s, or generated tokens/s over all replicas
    mfu: float | None  # achieved model-FLOPs utilisation (training)
    comm_fraction: float  # exposed communication / step time
    comm: StepComm | None
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


# ---------------------------------------------------------------- helpers


def _identity(
    workload: Workload,
    hw: Hardware,
    layout: Layout,
    memory: MemoryBreakdown,
    capacity: float,
    params: Params,
    fits: bool,
) -> dict[str, Any]:
    """The fields a training and an inference estimate share: what was sized, on what."""
    return {
        "workload": workload.name,
        "kind": workload.kind,
        "card": hw.card.id,
        "hardware": hw.label or hw.card.id,
        "layout": layout,
        "gpus": layout.gpus,
        "nodes": layout.nodes,
        "memory": memory,
        "capacity_bytes": capacity,
        "card_memory_bytes": hw.card.memory_gb * GB,
        "headroom": params.headroom,
        "fits": fits,
    }


def _gb(x: float) -> str:
    return f"{x / GB:.1f} GB"


def _pct(x: float) -> str:
    """A share in per cent with one decimal, so '15.3%' never reads as the 15% threshold."""
    return f"{x:.1%}"


def _comm_culprit(comm: StepComm, params: Params) -> str:
    """Name the largest exposed share of communication, for a reason a user can act on."""
    link = {"intra": "the intra-node link", "inter": "the inter-node fabric"}.get(
        comm.data_parallel_link, "the links"
    )
    parts = {
        f"data-parallel gradient/parameter traffic over {link}": comm.data_parallel_s
        * (1.0 - params.comm_overlap),
        "tensor-parallel activations (H09)": comm.tensor_parallel_s,
        "pipeline stage boundaries": comm.pipeline_s,
        "expert-parallel all-to-all": comm.expert_parallel_s,
    }
    return max(parts, key=lambda k: parts[k])


def memory_reason(total: float, capacity: float, card: Card, headroom: float) -> str:
    return (
        f"needs {_gb(total)} per GPU; {card.id} ({card.memory_gb:g} GB) with "
        f"{headroom:.0%} headroom gives {_gb(capacity)}"
    )


def capacity_bytes(card: Card, headroom: float) -> float:
    return card.memory_gb * GB * (1.0 - headroom)


def _structure_reasons(
    workload: Workload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> list[str]:
    gpn = hw.gpus_per_node
    out: list[str] = []
    if layout.gpus > layout.nodes * gpn:
        out.append(
            f"the layout needs {layout.gpus} GPUs but {layout.nodes} node(s) of {gpn} "
            f"hold {layout.nodes * gpn}"
        )
    if layout.tp > gpn:
        out.append(
            f"TP {layout.tp} spans nodes of {gpn} GPUs; tensor parallelism needs the "
            "intra-node link (H08)"
        )
    if arch.heads % layout.tp:
        out.append(f"TP {layout.tp} does not divide the {arch.heads} attention heads")
    if layout.pp > arch.layers:
        out.append(f"PP {layout.pp} exceeds the {arch.layers} layers")
    if layout.ep > 1 and (not arch.is_moe or arch.experts % layout.ep or layout.dp % layout.ep):
        out.append(f"EP {layout.ep} must divide both the experts ({arch.experts}) and DP")
    if layout.nodes > 1 and not params.allow_multi_node:
        out.append(f"the job spans {layout.nodes} nodes but multi-node jobs are disabled (H21)")
    if layout.nodes > params.max_nodes:
        out.append(f"{layout.nodes} nodes exceed the limit of {params.max_nodes} (H21)")
    spans = layout.nodes > 1 and (workload.kind != "inference" or layout.tp * layout.pp > gpn)
    if spans and hw.inter_node_gbps_per_gpu <= 0:
        out.append(f"{hw.label or hw.card.id} has no inter-node fabric; a job cannot span nodes")
    return out


def _peak(card: Card, precision: str, reasons: list[str]) -> float:
    """Peak FLOP/s at `precision`; a card without it is rejected (figures then use FP32)."""
    peak = peak_flops_per_s(card, precision)
    if peak is None:
        reasons.append(f"{card.id} has no {precision} tensor throughput in the catalogue")
        return card.tflops.fp32 * 1e12
    return peak


# ---------------------------------------------------------------- evaluate


def evaluate(workload: Workload, hw: Hardware, layout: Layout, params: Params) -> ConfigEstimate:
    """Estimate one layout. Never raises for an infeasible layout: it says why in `reasons`.
    Raises ValueError only for a malformed layout (a degree below 1, an unknown name, dp
    for inference or replicas for training)."""
    if min(layout.nodes, layout.tp, layout.pp, layout.dp, layout.replicas) < 1:
        raise ValueError(f"layout degrees must be at least 1: {layout}")
    if layout.micro_batch < 1 or layout.grad_accum < 1 or layout.ep < 1:
        raise ValueError(f"micro_batch, grad_accum and ep must be at least 1: {layout}")
    if layout.sharding not in SHARDINGS or layout.checkpointing not in CHECKPOINTINGS:
        raise ValueError(f"unknown sharding or checkpointing: {layout}")
    if workload.kind == "inference" and layout.dp != 1:
        raise ValueError(f"inference layouts scale with replicas, dp must be 1: {layout}")
    if workload.kind != "inference" and layout.replicas != 1:
        raise ValueError(f"training layouts scale with dp, replicas must be 1: {layout}")
    arch = resolve_arch(workload.model)
    if workload.kind == "inference":
        return _evaluate_inference(workload, arch, hw, layout, params)
    return _evaluate_training(workload, arch, hw, layout, params)


def _lora_rank(workload: Workload) -> tuple[int, float | None]:
    if workload.lora is None:
        return 16, None
    return workload.lora.rank, workload.lora.target_fraction


def _parallel(layout: Layout, gpus_per_node: int) -> Parallel:
    return Parallel(
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        sharding=layout.sharding,
        shard_group=max(1, min(layout.dp, gpus_per_node // layout.tp)),
        sequence_parallel=layout.sequence_parallel,
    )


def training_states_for(
    workload: Workload, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> ModelStates:
    """Model states per GPU of a training layout."""
    rank, fraction = _lora_rank(workload)
    return training_states(
        arch,
        kind=workload.kind,
        precision=workload.precision,
        optimizer=workload.optimizer,
        convention=params.bytes_per_param_convention,
        par=_parallel(layout, gpus_per_node),
        lora_rank=rank,
        lora_fraction=fraction,
    )


def training_activations_for(
    workload: Workload, arch: Arch, gpus_per_node: int, layout: Layout
) -> float:
    """Activation bytes on the fullest GPU of a training layout."""
    return training_activations_bytes(
        arch,
        seq=workload.seq_len,
        micro_batch=layout.micro_batch,
        grad_accum=layout.grad_accum,
        par=_parallel(layout, gpus_per_node),
        checkpointing=layout.checkpointing,
        flash_attention=workload.flash_attention,
        act_bytes=_act_bytes(workload),
    )


def _act_bytes(workload: Workload) -> float:
    return 4.0 if is_fp32_training(workload.precision, workload.optimizer) else 2.0


def training_memory(
    workload: Workload, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> MemoryBreakdown:
    """Memory per GPU of a training layout (the fullest GPU)."""
    states = training_states_for(workload, arch, gpus_per_node, layout, params)
    return MemoryBreakdown(
        weights_bytes=states.weights_bytes,
        gradients_bytes=states.gradients_bytes,
        optimizer_bytes=states.optimizer_bytes,
        activations_bytes=training_activations_for(workload, arch, gpus_per_node, layout),
        kv_cache_bytes=0.0,
        overhead_bytes=params.runtime_overhead_gb * GB,
    )


def _measured_memory(
    workload: Workload, hw: Hardware, gpus: int, memory: MemoryBreakdown, notes: list[str]
) -> MemoryBreakdown:
    """H12: a measured peak on this card and GPU count replaces a lower formula figure (the
    difference is booked as overhead, so the breakdown still sums to the total)."""
    m = workload.measured
    if m is None or m.peak_memory_gb is None or m.card != hw.card.id or m.gpus != gpus:
        return memory
    measured = m.peak_memory_gb * GB
    if measured <= memory.total_bytes:
        notes.append(
            f"measured peak {_gb(measured)} per GPU is below the formula's "
            f"{_gb(memory.total_bytes)}; the formula figure is kept"
        )
        return memory
    notes.append(f"measured peak {_gb(measured)} per GPU replaces the formula's total (H12)")
    extra = measured - memory.total_bytes
    return MemoryBreakdown(
        memory.weights_bytes,
        memory.gradients_bytes,
        memory.optimizer_bytes,
        memory.activations_bytes,
        memory.kv_cache_bytes,
        memory.overhead_bytes + extra,
    )


def _measured_rate_per_gpu(workload: Workload, card: Card) -> float | None:
    """Tokens/s per GPU from a measured run on this card (samples × seq_len if needed)."""
    m = workload.measured
    if m is None or m.card != card.id:
        return None
    if m.tokens_per_s is not None:
        return m.tokens_per_s / m.gpus
    if m.samples_per_s is not None:
        return m.samples_per_s * workload.seq_len / m.gpus
    return None


def _evaluate_training(
    workload: Workload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> ConfigEstimate:
    card = hw.card
    gpus = layout.tp * layout.pp * layout.dp
    reasons = _structure_reasons(workload, arch, hw, layout, params)
    notes: list[str] = list(arch.assumptions)
    if arch.coarse:
        notes.insert(0, arch.convention)
    if workload.kind not in ("lora", "qlora") and workload.precision in ("int8", "int4", "nf4"):
        notes.append(
            f"{workload.precision} full training is not a standard recipe; "
            "estimated as bf16 mixed precision"
        )

    memory = _measured_memory(
        workload, hw, gpus, training_memory(workload, arch, hw.gpus_per_node, layout, params), notes
    )
    capacity = capacity_bytes(card, params.headroom)
    fits = memory.total_bytes <= capacity
    if not fits:
        reasons.insert(0, memory_reason(memory.total_bytes, capacity, card, params.headroom))

    # --- compute
    tokens = float(workload.tokens or 0.0)
    seqs_per_step = layout.micro_batch * layout.grad_accum * layout.dp
    if workload.global_batch is not None and seqs_per_step != workload.global_batch:
        notes.append(
            f"global batch {seqs_per_step} sequences (micro-batch × accumulation × DP) "
            f"differs from the requested {workload.global_batch}"
        )
    tokens_per_step = float(seqs_per_step * workload.seq_len)
    steps = max(1, math.ceil(tokens / tokens_per_step))
    per_token = training_flops_per_token(arch, workload.kind)
    recompute = recompute_flops_per_token(
        arch,
        checkpointing=layout.checkpointing,
        seq=workload.seq_len,
        flash_attention=workload.flash_attention,
    )
    model_flops = per_token * tokens
    flops = (per_token + recompute) * tokens
    cprec = compute_precision(workload.kind, workload.precision, workload.optimizer)
    peak = _peak(card, cprec, reasons)

    mfu = params.mfu
    if workload.measured is not None and workload.measured.mfu is not None:
        mfu = workload.measured.mfu
        notes.append(f"measured MFU {mfu:.2f} replaces the assumed {params.mfu:.2f} (H12)")
    stage = SHARDING_STAGE[layout.sharding]
    if stage >= 3 and layout.dp > 1:
        mfu *= 1.0 - params.zero3_penalty
    doublings = math.log2(layout.nodes) if layout.nodes > 1 else 0.0
    node_factor = (1.0 - params.multi_node_penalty) ** doublings
    mfu *= node_factor
    if layout.checkpointing == "full":
        recompute_factor = 1.0 + params.recompute_time_overhead
    else:
        recompute_factor = 1.0 + recompute / per_token
    bubble = (layout.grad_accum + layout.pp - 1) / layout.grad_accum
    if layout.pp > 1 and bubble > 1.25:
        notes.append(
            f"pipeline bubble costs {bubble - 1:.0%} of step time with {layout.grad_accum} "
            f"micro-batches over {layout.pp} stages"
        )

    rate = _measured_rate_per_gpu(workload, card)
    measured_nodes = 1
    if rate is not None and workload.measured is not None:
        measured_nodes = math.ceil(workload.measured.gpus / hw.gpus_per_node)
        extra_doublings = max(0.0, doublings - math.log2(measured_nodes))
        compute_step = tokens_per_step / (
            rate * gpus * (1.0 - params.multi_node_penalty) ** extra_doublings
        )
        notes.append(
            f"measured {rate:,.0f} tokens/s per GPU on {card.id} replaces the MFU "
            "assumption (H12), scaled by GPU count"
        )
    else:
        compute_step = per_token * tokens_per_step * recompute_factor * bubble / (gpus * peak * mfu)

    # --- communication
    links = hw.links()
    if workload.kind in ("lora", "qlora"):
        rank, fraction = _lora_rank(workload)
        trainable_dense, trainable_expert = lora_params(arch, rank, fraction), 0.0
        grad_b, weight_trained_b = 4.0, adapter_state_bytes(workload.optimizer).weights
        weight_frozen_b = frozen_base_bytes(workload.kind, workload.precision)
        adapters = trainable_dense
    else:
        per = full_training_state_bytes(
            workload.precision, workload.optimizer, params.bytes_per_param_convention
        )
        trainable_dense, trainable_expert = arch.dense_params, arch.expert_params
        grad_b, weight_trained_b, weight_frozen_b = per.gradients, per.weights, per.weights
        adapters = 0.0
    par = Parallel(
        layout.tp, layout.pp, layout.dp, layout.ep, layout.sharding, None, layout.sequence_parallel
    )
    comm = training_comm(
        arch,
        par=par,
        gpus_per_node=hw.gpus_per_node,
        seq=workload.seq_len,
        micro_batch=layout.micro_batch,
        grad_accum=layout.grad_accum,
        checkpointing=layout.checkpointing,
        trainable_dense=trainable_dense,
        trainable_expert=trainable_expert,
        grad_bytes=grad_b,
        weight_bytes_trainable=weight_trained_b,
        weight_bytes_frozen=weight_frozen_b,
        links=links,
        overlap=params.comm_overlap,
        act_bytes=_act_bytes(workload),
    )
    exposed = comm.exposed_s
    if rate is not None and layout.nodes <= measured_nodes:
        exposed = 0.0  # the measured run already paid its communication
    step = compute_step + exposed
    comm_fraction = exposed / step if step > 0 and math.isfinite(step) else 1.0

    # --- checkpoint
    size = training_checkpoint(
        kind=workload.kind,
        params=arch.params,
        adapter_params=adapters,
        precision=workload.precision,
        optimizer=workload.optimizer,
    )
    if stage >= 1 or workload.kind in ("lora", "qlora"):
        writers = layout.nodes
    else:
        writers = math.ceil(layout.tp * layout.pp / hw.gpus_per_node)
    stall = checkpoint_stall(
        checkpoint_bytes=size.full_bytes,
        writers=min(writers, layout.nodes),
        write_bytes_per_s=hw.storage_write_gbs * GB,
        steps=steps,
        interval_steps=params.checkpoint_interval_steps,
    )
    time_s = steps * step + stall.stall_s
    stall_fraction = stall.stall_s / time_s if time_s > 0 and math.isfinite(time_s) else 1.0
    achieved_mfu = model_flops / (time_s * gpus * peak) if time_s > 0 else 0.0

    # --- classification and verdicts
    elem = 4.0 if cprec == "tf32" else 2.0
    intensity = training_intensity(
        arch, seq=workload.seq_len, micro_batch=layout.micro_batch, tp=layout.tp, elem=elem
    )
    ridge = peak / memory_bandwidth_bytes_per_s(card)
    if comm_fraction > params.comm_threshold:
        bottleneck = "communication"
        reasons.append(
            f"communication {_pct(comm_fraction)} of step time exceeds the "
            f"{params.comm_threshold:.0%} threshold (H11; mostly {_comm_culprit(comm, params)})"
        )
    elif intensity < ridge:
        bottleneck = "memory_bandwidth"
    else:
        bottleneck = "compute"
    if stall_fraction > params.checkpoint_stall_max_fraction:
        reasons.append(
            f"checkpoint stall {_pct(stall_fraction)} of training time exceeds "
            f"{params.checkpoint_stall_max_fraction:.0%} (H16): saving {_gb(size.full_bytes)} "
            f"at {hw.storage_write_gbs:g} GB/s per node takes {stall.save_time_s:,.0f} s "
            f"every {params.checkpoint_interval_steps} steps"
        )
    if rate is None and 0 < achieved_mfu < params.mfu_floor:
        notes.append(
            f"achieved MFU {achieved_mfu:.2f} is below the {params.mfu_floor:.2f} floor (H12): "
            "this layout wastes the cards"
        )
    meets = True
    if workload.deadline_hours is not None:
        meets = time_s <= workload.deadline_hours * SECONDS_PER_HOUR

    return ConfigEstimate(
        **_identity(workload, hw, layout, memory, capacity, params, fits),
        flops=flops,
        model_flops=model_flops,
        time_to_train_s=time_s,
        step_time_s=step,
        steps=steps,
        tokens_per_s=tokens / time_s if time_s > 0 else 0.0,
        mfu=achieved_mfu,
        comm_fraction=comm_fraction,
        comm=comm,
        checkpoint_bytes=size.full_bytes,
        checkpoint_weights_bytes=size.weights_bytes,
        checkpoint_stall_fraction=stall_fraction,
        bottleneck=bottleneck,
        arithmetic_intensity=intensity,
        ridge_point=ridge,
        meets_deadline=meets,
        reasons=tuple(reasons),
        notes=tuple(notes),
        coarse=arch.coarse,
        measured=rate is not None,
    )


# ---------------------------------------------------------------- inference


def inference_context(workload: Workload) -> int:
    return workload.context_len or workload.seq_len


def inference_memory(
    workload: Workload, arch: Arch, layout: Layout, params: Params, batch: int | None = None
) -> MemoryBreakdown:
    """Memory per GPU of one replica decoding `batch` sequences (default: micro_batch)."""
    mp = layout.tp * layout.pp
    context = inference_context(workload)
    kv_b = kv_bytes_per_element(workload.precision)
    return MemoryBreakdown(
        weights_bytes=weights_bytes(arch, workload.precision) / mp,
        gradients_bytes=0.0,
        optimizer_bytes=0.0,
        activations_bytes=inference_activations_bytes(arch, context=context, tp=layout.tp),
        kv_cache_bytes=kv_cache_bytes(
            arch,
            context=context,
            batch=layout.micro_batch if batch is None else batch,
            kv_bytes=kv_b,
            tp=layout.tp,
            pp=layout.pp,
        ),
        overhead_bytes=params.runtime_overhead_gb * GB,
    )


def replica_nodes(layout: Layout, gpus_per_node: int) -> int:
    """Nodes needed to hold `replicas` copies of tp × pp GPUs, packed."""
    mp = layout.tp * layout.pp
    if mp > gpus_per_node:
        return layout.replicas * math.ceil(mp / gpus_per_node)
    return math.ceil(layout.replicas / (gpus_per_node // mp))


def _evaluate_inference(
    workload: Workload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> ConfigEstimate:
    card = hw.card
    mp = layout.tp * layout.pp
    gpus = mp * layout.replicas
    reasons = _structure_reasons(workload, arch, hw, layout, params)
    needed_nodes = replica_nodes(layout, hw.gpus_per_node)
    if needed_nodes > layout.nodes and not any("GPUs but" in r for r in reasons):
        reasons.append(
            f"{layout.replicas} replica(s) of {mp} GPU(s) need {needed_nodes} node(s) of "
            f"{hw.gpus_per_node} GPUs, the layout has {layout.nodes}"
        )
    notes: list[str] = list(arch.assumptions)
    if arch.coarse:
        notes.insert(0, arch.convention)
    batch = layout.micro_batch
    memory = _measured_memory(
        workload, hw, gpus, inference_memory(workload, arch, layout, params), notes
    )
    capacity = capacity_bytes(card, params.headroom)
    fits = memory.total_bytes <= capacity
    if not fits:
        reasons.insert(0, memory_reason(memory.total_bytes, capacity, card, params.headroom))

    cprec = compute_precision("inference", workload.precision, workload.optimizer)
    peak = _peak(card, cprec, reasons)
    context = inference_context(workload)
    kv_b = kv_bytes_per_element(workload.precision)
    kv_token_gpu = kv_cache_bytes(
        arch, context=1, batch=1, kv_bytes=kv_b, tp=layout.tp, pp=layout.pp
    )
    step = decode_step(
        arch,
        batch=batch,
        context=context,
        weights_bytes_per_gpu=memory.weights_bytes,
        kv_bytes_per_token_per_gpu=kv_token_gpu,
        tp=layout.tp,
        pp=layout.pp,
        peak_flops=peak,
        bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s(card),
        efficiency=params.inference_efficiency,
        link_bytes_per_s=hw.links().intra_bytes_per_s,
    )
    rate = _measured_rate_per_gpu(workload, card)
    if rate is not None:
        per_replica = rate * mp
        notes.append(
            f"measured {rate:,.0f} tokens/s per GPU on {card.id} replaces the roofline (H12)"
        )
    else:
        per_replica = step.tokens_per_s
    total = per_replica * layout.replicas
    if workload.target_tokens_per_s is not None and total < workload.target_tokens_per_s:
        reasons.append(
            f"{layout.replicas} replica(s) × {per_replica:,.0f} tokens/s = {total:,.0f} "
            f"tokens/s is below the target {workload.target_tokens_per_s:,.0f} tokens/s"
        )
    if workload.concurrency is not None and layout.replicas * batch < workload.concurrency:
        reasons.append(
            f"{layout.replicas} replica(s) × {batch} sequences hold fewer than the "
            f"{workload.concurrency} concurrent sequences required"
        )
    comm_fraction = step.comm_time_s / step.time_s if step.time_s > 0 else 0.0
    bottleneck = "communication" if comm_fraction > params.comm_threshold else step.bound
    if bottleneck != "compute" and memory.kv_cache_bytes > memory.weights_bytes:
        notes.append("the KV cache outweighs the weights: context × concurrency sets the card")
    size = inference_checkpoint(weights_bytes=weights_bytes(arch, workload.precision))
    per_token = 2.0 * arch.active_params
    return ConfigEstimate(
        **_identity(workload, hw, layout, memory, capacity, params, fits),
        flops=per_token,
        model_flops=per_token,
        time_to_train_s=None,
        step_time_s=step.time_s,
        steps=None,
        tokens_per_s=total,
        mfu=None,
        comm_fraction=comm_fraction,
        comm=None,
        checkpoint_bytes=size.full_bytes,
        checkpoint_weights_bytes=size.weights_bytes,
        checkpoint_stall_fraction=0.0,
        bottleneck=bottleneck,
        arithmetic_intensity=step.intensity,
        ridge_point=peak / memory_bandwidth_bytes_per_s(card),
        meets_deadline=True,
        reasons=tuple(reasons),
        notes=tuple(notes),
        coarse=arch.coarse,
        measured=rate is not None,
    )


# ---------------------------------------------------------------- whole-model figure


def whole_model_memory(workload: Workload, params: Params) -> MemoryBreakdown:
    """The formula's memory for the whole job on one (unbounded) GPU: no parallelism, no
    sharding, the workload's own micro-batch and recomputation (none if unset); inference
    holds `concurrency` (else 1) sequences at full context. This is the figure printed next
    to the rules of thumb (H05, H30), which are whole-model figures too."""
    arch = resolve_arch(workload.model)
    if workload.kind == "inference":
        layout = Layout(nodes=1, tp=1, pp=1, dp=1, micro_batch=workload.concurrency or 1)
        return inference_memory(workload, arch, layout, params)
    layout = Layout(
        nodes=1,
        tp=1,
        pp=1,
        dp=1,
        checkpointing=workload.gradient_checkpointing or "none",
        micro_batch=workload.micro_batch,
    )
    return training_memory(workload, arch, 1, layout, params)
