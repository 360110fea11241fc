"""A training layout as the formulas read it: model states and activations per GPU
(memory.py), the flat step description and framework switches steptime.py times, and the
model FLOPs per token (PaLM's MFU numerator).

training.py composes these into an estimate and applies the calibration; calibration.py
uses them to model the measured run's own layout, so it never imports training.py.
"""

from __future__ import annotations

from gpusolve.estimate.compute import (
    attention_precision,
    compute_precision,
    weight_flops_per_token,
)
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.memory import (
    MOMENT_BYTES,
    SHARDING_STAGE,
    ModelStates,
    Parallel,
    adapter_state_bytes,
    frozen_base_bytes,
    full_training_state_bytes,
    is_fp32_training,
    lora_params,
    training_activations_bytes,
    training_states,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.steptime import Framework, StepShape
from gpusolve.models.params import Params
from gpusolve.models.requirements import FineTuneWorkload, Training


def lora_rank(workload: FineTuneWorkload) -> tuple[int, float | None]:
    if workload.lora is None:
        return 16, None
    return workload.lora.rank, workload.lora.target_fraction


def parallel(layout: Layout, gpus_per_node: int) -> Parallel:
    return Parallel(
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        sharding=layout.sharding,
        shard_group=max(1, min(layout.dp, gpus_per_node // (layout.tp * layout.cp))),
        sequence_parallel=layout.sequence_parallel,
        vp=layout.vp,
        cp=layout.cp,
    )


def training_states_for(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> ModelStates:
    """Model states per GPU of a training layout."""
    rank, fraction = lora_rank(workload) if isinstance(workload, FineTuneWorkload) else (16, None)
    return training_states(
        arch,
        kind=workload.kind,
        precision=workload.precision,
        optimizer=workload.optimizer,
        convention=params.bytes_per_param_convention,
        par=parallel(layout, gpus_per_node),
        lora_rank=rank,
        lora_fraction=fraction,
    )


def act_bytes(workload: Training) -> float:
    return 4.0 if is_fp32_training(workload.precision, workload.optimizer) else 2.0


def training_activations_for(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout
) -> float:
    """Activation bytes on the fullest GPU of a training layout."""
    return training_activations_bytes(
        arch,
        seq=workload.seq_len,
        micro_batch=layout.micro_batch,
        grad_accum=layout.grad_accum,
        par=parallel(layout, gpus_per_node),
        checkpointing=layout.checkpointing,
        flash_attention=workload.flash_attention,
        act_bytes=act_bytes(workload),
    )


def framework(params: Params) -> Framework:
    return Framework(
        dp_comm_overlap=params.dp_comm_overlap,
        tp_comm_overlap=params.tp_comm_overlap,
        ep_comm_overlap=params.ep_comm_overlap,
    )


def step_shape(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> StepShape:
    """The flat description of one step that steptime.py times."""
    card = hw.card
    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    frozen = isinstance(workload, FineTuneWorkload)
    if isinstance(workload, FineTuneWorkload):
        rank, fraction = lora_rank(workload)
        adapters = lora_params(arch, rank, fraction)
        ad = adapter_state_bytes(workload.optimizer)
        grad_b, weight_b, opt_b = ad.gradients, ad.weights, MOMENT_BYTES[workload.optimizer]
        trained_dense, trained_expert = adapters, 0.0
    else:
        per = full_training_state_bytes(
            workload.precision, workload.optimizer, params.bytes_per_param_convention
        )
        grad_b, weight_b, opt_b = per.gradients, per.weights, per.optimizer
        trained_dense, trained_expert = arch.dense_params, arch.expert_params
        adapters = 0.0
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
    )


def model_flops_per_token(arch: Arch, workload: Training) -> float:
    """PaLM's MFU numerator (Chowdhery et al. 2022, App. B): 6·N (4·N for a frozen LoRA base:
    no weight gradients) over the parameters a token touches, the input embedding excluded,
    plus attention's 6·L·s·heads·(d_qk + d_v) (12·L·s·h for ordinary heads)."""
    attention = (
        6.0 * arch.layers * workload.seq_len * arch.heads * (arch.qk_head_dim + arch.value_head_dim)
    )
    return weight_flops_per_token(arch, workload.kind) + attention
