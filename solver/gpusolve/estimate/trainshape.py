"""A training layout as the formulas read it: model states and activations per GPU
(memory.py), the flat step description and framework switches steptime.py times, and the
model FLOPs per token (PaLM's MFU numerator).

training.py composes these into an estimate and applies the calibration; calibration.py
uses them to model the measured run's own layout, so it never imports training.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gpusolve.estimate.activations import stage_activations_bytes
from gpusolve.estimate.compute import (
    attention_precision,
    compute_precision,
    weight_flops_per_token,
)
from gpusolve.estimate.frozenbase import ALL_TARGETS, FrozenBase, frozen_base_of
from gpusolve.estimate.hardware import Hardware, pcie_peer_bidir_gbs
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.memory import (
    REDUCED_GRADIENT_BYTES,
    SHARDING_STAGE,
    ModelStates,
    Parallel,
    Savings,
    StageParams,
    adapter_state_bytes,
    frozen_base_bytes,
    frozen_base_format,
    full_training_state_bytes,
    is_fp32_training,
    lora_params,
    training_states,
)
from gpusolve.estimate.pipeline import SplitError, StageSplit, split_stages
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stacks import Stack, default_stack, stack_named
from gpusolve.estimate.stageparams import mtp_active_params, mtp_params, stage_params
from gpusolve.estimate.stepshape import Framework, StepShape
from gpusolve.models.params import Params
from gpusolve.models.requirements import FineTuneWorkload, Lora, Training


def lora_rank(workload: FineTuneWorkload, arch: Arch | None = None) -> tuple[int, float | None]:
    """The adapters' rank and trainable fraction: the stated one, else (with `arch`) the
    fraction of the stated targets, else None (all Linear layers)."""
    if workload.lora is None:
        return 16, None
    rank, fraction = workload.lora.rank, workload.lora.target_fraction
    if fraction is None and workload.lora.targets and arch is not None:
        fraction = lora_params(arch, rank, targets=lora_targets(workload)) / arch.params
    return rank, fraction


def lora_targets(workload: FineTuneWorkload) -> frozenset[str]:
    """The Linear layers with adapters: the stated ones, else all of them."""
    lora = workload.lora
    return frozenset(lora.targets) if lora and lora.targets else ALL_TARGETS


def frozen_base_for(workload: Training) -> FrozenBase | None:
    """How the backward pass sees a LoRA/QLoRA run's frozen base; None when all is trained."""
    if not isinstance(workload, FineTuneWorkload):
        return None
    rank = workload.lora.rank if workload.lora else 16
    return frozen_base_of(
        stack_of(workload),
        base_format=frozen_base_format(workload.kind, workload.precision),
        rank=rank,
        targets=lora_targets(workload),
        dropout=workload.lora.dropout if workload.lora else Lora().dropout,
    )


# The layout's degrees Parallel takes under the same names.
_DEGREES = ("tp", "pp", "dp", "ep", "sharding", "sequence_parallel", "vp", "cp")


def parallel(layout: Layout, gpus_per_node: int) -> Parallel:
    """The layout's degrees, and the data-parallel ranks one node holds (the shard group of
    hybrid sharding)."""
    shard_group = max(1, min(layout.dp, gpus_per_node // (layout.tp * layout.cp)))
    return Parallel(**{n: getattr(layout, n) for n in _DEGREES}, shard_group=shard_group)


def mtp_depth_of(workload: Training, arch: Arch) -> int:
    """Multi-token prediction modules the run trains: the model's, in full training only
    (LoRA/QLoRA adapt the main model; the MTP module is a pre-training objective, §2.2)."""
    return 0 if isinstance(workload, FineTuneWorkload) else arch.mtp_depth


def mtp_trained_params(workload: Training, arch: Arch) -> tuple[float, float]:
    """(outside routed experts, routed experts) of all the MTP modules the run trains."""
    depth = mtp_depth_of(workload, arch)
    if not depth:
        return 0.0, 0.0
    dense, expert = mtp_params(arch)
    return depth * dense, depth * expert


def stack_of(workload: Training) -> Stack:
    """The training code's stack: the workload's, else the default for its kind."""
    return stack_named(workload.framework or default_stack(workload.kind))


def savings_of(workload: Training) -> Savings:
    return Savings.of(workload.memory_savings)


def schedule_of(workload: Training, layout: Layout) -> str:
    """The pipeline schedule: the workload's, else interleaved with virtual stages, else 1F1B."""
    chosen = workload.pipeline.schedule if workload.pipeline else None
    if chosen == "dualpipe":
        return "dualpipe"
    return "interleaved" if layout.vp > 1 else "1f1b"


def stage_split(workload: Training, arch: Arch, layout: Layout) -> StageSplit:
    """The layers per virtual stage for this layout. Raises SplitError (`split_reason`)."""
    pipe = workload.pipeline
    per_stage = tuple(pipe.layers_per_stage) if pipe and pipe.layers_per_stage else None
    return split_stages(
        arch.layers,
        layout.pp,
        layout.vp,
        schedule_of(workload, layout),
        first=pipe.first_stage_layers if pipe else None,
        last=pipe.last_stage_layers if pipe else None,
        per_stage=per_stage,
    )


def split_reason(workload: Training, arch: Arch, layout: Layout) -> str | None:
    """Why the workload's pipeline cannot be built on this layout, or None."""
    pipe = workload.pipeline
    if pipe and pipe.schedule == "interleaved" and layout.vp < 2 and layout.pp > 1:
        return "pipeline.schedule interleaved needs virtual stages (VP ≥ 2)"
    if pipe and pipe.schedule == "dualpipe" and layout.vp > 1:
        return "pipeline.schedule dualpipe runs one chunk per direction (VP 1)"
    if pipe and pipe.schedule == "dualpipe" and layout.pp % 2:
        return f"pipeline.schedule dualpipe needs an even PP (got {layout.pp})"
    try:
        stage_split(workload, arch, layout)
    except SplitError as exc:
        return f"pipeline: {exc}"
    return None


@dataclass(frozen=True)
class StageMemory:
    """One pipeline rank's memory: the model states it holds and its activations at peak."""

    rank: int
    layers: int
    embedding: bool
    head: bool
    states: ModelStates
    activations_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.states.total_bytes + self.activations_bytes


# stage_memory_for's results by the identities of its workload, arch and params (frozen,
# so one object always holds the same values; hashing them field by field would cost more
# than the lookup saves) and the layout's value. The layout search asks about the same
# layout on every server with the same GPUs per node, and again when it times a layout
# it has just fitted: four calls in five are repeats on the examples.
_STAGES: dict[
    tuple[int, int, int, Layout, int],
    tuple[tuple[Training, Arch, Params], tuple[StageMemory, ...]],
] = {}
_STAGES_MAX = 20_000


def stage_memory_for(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> tuple[StageMemory, ...]:
    """Every pipeline rank's memory (an even split where the workload's cannot be built:
    `split_reason` reports that)."""
    key = (id(workload), id(arch), gpus_per_node, layout, id(params))
    hit = _STAGES.get(key)
    if hit is not None:
        (w, a, p), stages = hit
        if w is workload and a is arch and p is params:
            return stages
    stages = _stage_memory_of(workload, arch, gpus_per_node, layout, params)
    if len(_STAGES) >= _STAGES_MAX:
        _STAGES.clear()
    # The value keeps the objects alive, so their ids cannot be reused meanwhile.
    _STAGES[key] = ((workload, arch, params), stages)
    return stages


def _stage_memory_of(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> tuple[StageMemory, ...]:
    if isinstance(workload, FineTuneWorkload):
        rank, fraction = lora_rank(workload, arch)
    else:
        rank, fraction = 16, None
    return _stage_memory(
        arch,
        kind=workload.kind,
        precision=workload.precision,
        optimizer=workload.optimizer,
        convention=params.bytes_per_param_convention,
        lora=(rank, fraction),
        **_activation_inputs(workload, arch, gpus_per_node, layout),
    )


def _activation_inputs(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout
) -> dict[str, Any]:
    """What the workload and the layout fix of every rank's activations, as
    `stage_activations_bytes` names it (an even split where the workload's cannot be built:
    `split_reason` reports that)."""
    schedule = schedule_of(workload, layout)
    try:
        split = stage_split(workload, arch, layout)
    except SplitError:
        split = split_stages(arch.layers, layout.pp, layout.vp, schedule)
    return {
        "split": split,
        "schedule": schedule,
        "par": parallel(layout, gpus_per_node),
        "seq": workload.seq_len,
        "micro_batch": layout.micro_batch,
        "grad_accum": layout.grad_accum,
        "checkpointing": layout.checkpointing,
        "flash_attention": workload.flash_attention,
        "act_bytes": act_bytes(workload),
        "dropout": workload.dropout,
        "savings": savings_of(workload),
        "mtp_depth": mtp_depth_of(workload, arch),
        "stack": stack_of(workload),
        "frozen": frozen_base_for(workload),
    }


@lru_cache(maxsize=4096)
def _stage_memory(
    arch: Arch,
    *,
    split: StageSplit,
    schedule: str,
    par: Parallel,
    kind: str,
    precision: str,
    optimizer: str,
    convention: int,
    lora: tuple[int, float | None],
    seq: int,
    micro_batch: int,
    grad_accum: int,
    checkpointing: str,
    flash_attention: bool,
    act_bytes: float,
    dropout: bool,
    savings: Savings,
    mtp_depth: int,
    stack: Stack,
    frozen: FrozenBase | None,
) -> tuple[StageMemory, ...]:
    acts = stage_activations_bytes(
        arch,
        split=split,
        schedule=schedule,
        seq=seq,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        par=par,
        checkpointing=checkpointing,
        flash_attention=flash_attention,
        act_bytes=act_bytes,
        dropout=dropout,
        savings=savings,
        mtp_depth=mtp_depth,
        stack=stack,
        frozen=frozen,
    )
    out = []
    memo: dict[StageParams, ModelStates] = {}  # most ranks hold the same
    for r, held in enumerate(stage_params(arch, split, mtp_depth)):
        states = memo.get(held)
        if states is None:
            states = memo[held] = training_states(
                arch,
                kind=kind,
                precision=precision,
                optimizer=optimizer,
                convention=convention,
                par=par,
                lora_rank=lora[0],
                lora_fraction=lora[1],
                stage=held,
                savings=savings,
                stack=stack,
            )
        out.append(
            StageMemory(
                r, held.layers, split.holds_embedding(r), split.holds_head(r), states, acts[r]
            )
        )
    return tuple(out)


def fullest_stage(stages: tuple[StageMemory, ...]) -> StageMemory:
    return max(stages, key=lambda st: st.total_bytes)


def training_states_for(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> ModelStates:
    """Model states on the fullest GPU of a training layout."""
    return fullest_stage(stage_memory_for(workload, arch, gpus_per_node, layout, params)).states


def act_bytes(workload: Training) -> float:
    return 4.0 if is_fp32_training(workload.precision, workload.optimizer) else 2.0


def training_activations_for(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, *, working_set: bool = True
) -> float:
    """Activation bytes on the pipeline rank that holds the most of them; without
    `working_set`, only what the forward pass saves (recomputation's backward working set,
    which autograd allocates later, excluded)."""
    inputs = _activation_inputs(workload, arch, gpus_per_node, layout)
    return max(stage_activations_bytes(arch, working_set=working_set, **inputs))


def framework(params: Params, schedule: str = "1f1b") -> Framework:
    """How the software runs the step. DualPipe exists to overlap each forward chunk's
    all-to-alls with the paired backward chunk's compute and the reverse (DeepSeek-V3 §3.2.1,
    Figure 4), so that schedule always hides the expert-parallel traffic."""
    return Framework(
        dp_comm_overlap=params.dp_comm_overlap,
        tp_comm_overlap=params.tp_comm_overlap,
        ep_comm_overlap=params.ep_comm_overlap or schedule == "dualpipe",
    )


def step_shape(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> StepShape:
    """The flat description of one step that steptime.py times."""
    card = hw.card
    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    frozen = isinstance(workload, FineTuneWorkload)
    if isinstance(workload, FineTuneWorkload):
        rank, fraction = lora_rank(workload, arch)
        adapters = lora_params(arch, rank, fraction)
        ad = adapter_state_bytes(workload.optimizer, stack_of(workload))
        grad_b, weight_b, opt_b = ad.gradients, ad.weights, ad.optimizer
        trained_dense, trained_expert = adapters, 0.0
        adapted_share = adapters / max(1.0, lora_params(arch, rank))
    else:
        convention = params.bytes_per_param_convention
        per = full_training_state_bytes(workload.precision, workload.optimizer, convention)
        grad_b, weight_b, opt_b = per.gradients, per.weights, per.optimizer
        if not is_fp32_training(workload.precision, workload.optimizer):
            grad_b = REDUCED_GRADIENT_BYTES.get(convention, grad_b)
        mtp_dense, mtp_expert = mtp_trained_params(workload, arch)
        trained_dense = arch.dense_params + mtp_dense
        trained_expert = arch.expert_params + mtp_expert
        adapters = 0.0
        adapted_share = 0.0
    gemm_tflops = card.tflops_at(fmt) or card.tflops.fp32
    attn_tflops = card.tflops_at(attention_precision(fmt)) or gemm_tflops
    return StepShape(
        tokens_per_micro=max(1, layout.micro_batch * workload.seq_len // layout.cp),
        seq=workload.seq_len,
        micro_batch=layout.micro_batch,
        grad_accum=layout.grad_accum,
        tp=layout.tp,
        pp=layout.pp,
        vp=layout.vp,
        cp=layout.cp,
        dp=layout.dp,
        ep=layout.ep,
        sequence_parallel=layout.sequence_parallel_on,
        sharding=layout.sharding,
        zero_stage=SHARDING_STAGE[layout.sharding],
        checkpointing=layout.checkpointing,
        flash_attention=workload.flash_attention,
        dropout=workload.dropout,
        frozen_base=frozen,
        qlora=workload.kind == "qlora",
        adapter_params_per_layer=adapters / arch.layers,
        act_bytes=act_bytes(workload),
        gemm_format=fmt,
        gemm_peak=gemm_tflops * 1e12,
        attention_peak=attn_tflops * 1e12,
        grad_bytes=grad_b,
        weight_bytes=weight_b,
        frozen_weight_bytes=frozen_base_bytes(workload.kind, workload.precision),
        optimizer_bytes=opt_b,
        trained_dense=trained_dense,
        trained_expert=trained_expert,
        stage_layers=_rank_layers(workload, arch, layout),
        schedule=schedule_of(workload, layout),
        offload_optimizer=savings_of(workload).offload_optimizer,
        host_bytes_per_s=pcie_peer_bidir_gbs(card) * 1e9 / 2,
        mtp_depth=mtp_depth_of(workload, arch),
        stack=stack_of(workload).name,
        adapted_share=adapted_share,
    )


def _rank_layers(workload: Training, arch: Arch, layout: Layout) -> tuple[int, ...]:
    """Layers per rank for the step time (DualPipe: a rank computes one stage per micro-batch
    on average, so its stage's layers); empty when the split cannot be built."""
    try:
        split = stage_split(workload, arch, layout)
    except SplitError:
        return ()
    if schedule_of(workload, layout) == "dualpipe":
        return tuple(split.virtual)
    return tuple(split.layers(r) for r in range(split.pp))


def model_flops_per_token(arch: Arch, workload: Training) -> float:
    """PaLM's MFU numerator (Chowdhery et al. 2022, App. B): 6·N (4·N for a frozen LoRA base:
    no weight gradients) over the parameters a token touches, the input embedding excluded,
    plus attention's 6·L·s·heads·(d_qk + d_v) (12·L·s·h for ordinary heads)."""
    attention = (
        6.0 * arch.layers * workload.seq_len * arch.heads * (arch.qk_head_dim + arch.value_head_dim)
    )
    return weight_flops_per_token(arch, workload.kind) + attention


def mtp_flops_per_token(arch: Arch, workload: Training) -> float:
    """What the multi-token prediction modules add per token, in the same convention: per
    depth, 6·N over one module's active parameters (its block, the 2h x h projection, its
    norms) and the shared output head's h·V, plus one block's attention. Executed work (step
    time, HFU); not in `model_flops_per_token`, the model's own MFU numerator."""
    depth = mtp_depth_of(workload, arch)
    if not depth:
        return 0.0
    weights = mtp_active_params(arch) + arch.hidden * arch.vocab
    attention = 6.0 * workload.seq_len * arch.heads * (arch.qk_head_dim + arch.value_head_dim)
    return depth * (6.0 * weights + attention)
