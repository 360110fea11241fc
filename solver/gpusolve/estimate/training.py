"""A training layout: memory per GPU, the step time from its parts, checkpoints.

`evaluate_training` composes memory.py (model states, activations), steptime.py (compute,
communication per collective, the pipeline bubble, recomputation, the optimizer step) and
checkpoint.py (H16). Nothing here assumes an MFU: MFU and HFU are what the step time gives.
H12's healthy band (40-60%, below 30% misconfigured), H10's 20-30% recompute cost, H11's 15%
communication threshold and H15's ZeRO-3 loss are checks on the result, reported as notes or
a bottleneck class, not inputs and not rejections.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpusolve.estimate.calibration import calibrated_step, calibration_for, transfer
from gpusolve.estimate.checkpoint import checkpoint_stall, training_checkpoint
from gpusolve.estimate.compute import compute_precision, training_intensity
from gpusolve.estimate.efficiency import efficiency_of
from gpusolve.estimate.goodput import Goodput, GoodputInputs, evaluation_s, goodput, rampup_s
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import (
    ConfigEstimate,
    Layout,
    StageFigures,
    gb,
    overhead_bytes,
    pct,
    peak_flops,
    structure_reasons,
)
from gpusolve.estimate.memory import SHARDING_STAGE, MemoryBreakdown
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import StepBreakdown
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainshape import (
    StageMemory,
    framework,
    model_flops_per_token,
    mtp_flops_per_token,
    mtp_trained_params,
    split_reason,
    stage_memory_for,
    step_shape,
)
from gpusolve.estimate.units import GB, SECONDS_PER_HOUR
from gpusolve.models.params import Params
from gpusolve.models.requirements import FineTuneWorkload, Training, TrainingBase

# H10: "gradient checkpointing ... adds 20-30% time"; H15: a ZeRO-3 loss within 10% is
# excellent. Checks on the computed result, printed as notes.
H10_RECOMPUTE_BAND = (0.20, 0.30)
H15_ZERO3_LOSS = 0.10


def training_stages(
    workload: Training,
    arch: Arch,
    gpus_per_node: int,
    layout: Layout,
    params: Params,
    activation_factor: float = 1.0,
) -> tuple[StageFigures, ...]:
    """Memory of every pipeline rank; a measured run's activation factor applies to each."""
    overhead = overhead_bytes(params, layout.gpus)
    stages = stage_memory_for(workload, arch, gpus_per_node, layout, params)
    return tuple(_figures(st, overhead, activation_factor) for st in stages)


def _figures(st: StageMemory, overhead: float, activation_factor: float) -> StageFigures:
    memory = MemoryBreakdown(
        weights_bytes=st.states.weights_bytes,
        gradients_bytes=st.states.gradients_bytes,
        optimizer_bytes=st.states.optimizer_bytes,
        activations_bytes=st.activations_bytes * activation_factor,
        kv_cache_bytes=0.0,
        overhead_bytes=overhead,
        gathered_weights_bytes=st.states.gathered_weights_bytes,
    )
    return StageFigures(st.rank, st.layers, st.embedding, st.head, memory)


def fullest(stages: tuple[StageFigures, ...]) -> MemoryBreakdown:
    """The memory of the fullest pipeline rank: the one the fit is judged on."""
    return max(stages, key=lambda st: st.memory.total_bytes).memory


def training_memory(
    workload: Training, arch: Arch, gpus_per_node: int, layout: Layout, params: Params
) -> MemoryBreakdown:
    """Memory per GPU of a training layout (the fullest pipeline rank)."""
    return fullest(training_stages(workload, arch, gpus_per_node, layout, params))


def goodput_inputs(workload: TrainingBase) -> GoodputInputs:
    g = workload.goodput
    if g is None:
        return GoodputInputs()
    return GoodputInputs(
        failures_per_gpu_hour=g.failures_per_gpu_hour,
        restart_s=None if g.restart_minutes is None else g.restart_minutes * 60,
        checkpoint_interval_s=(
            None if g.checkpoint_interval_minutes is None else g.checkpoint_interval_minutes * 60
        ),
        overhead_share=g.overhead_share,
    )


def planned_overheads(
    workload: Training, stack: str, step: StepBreakdown, steps: int, tokens_per_step: float
) -> tuple[float, float]:
    """(evaluation, batch ramp-up) seconds a run adds by default (goodput.py's sources). An
    evaluation pass is the step's forward: a third of its compute (backward GEMMs twice the
    forward), half for a frozen LoRA base (no weight gradients)."""
    if not math.isfinite(step.step_s):
        return 0.0, 0.0
    forward = step.compute_s / (2.0 if isinstance(workload, FineTuneWorkload) else 3.0)
    evaluation = evaluation_s(steps=steps, forward_s=forward, stack=stack)
    ramp = 0.0
    if workload.kind == "pretrain":
        fixed = step.bubble_s + step.dp_comm_s + step.optimizer_s
        ramp = rampup_s(
            tokens=float(workload.tokens or 0.0), batch_tokens=tokens_per_step, fixed_s=fixed
        )
    return evaluation, ramp


def evaluate_training(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> ConfigEstimate:
    card = hw.card
    gpus = layout.gpus
    reasons = structure_reasons(workload, arch, hw, layout, params)
    notes: list[str] = list(arch.assumptions)
    if arch.coarse:
        notes.insert(0, arch.convention)
    if workload.kind not in ("lora", "qlora") and workload.precision in ("int8", "int4", "nf4"):
        notes.append(
            f"{workload.precision} full training is not a standard recipe; "
            "estimated as bf16 mixed precision"
        )

    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    cal = calibration_for(workload, arch, params, card)
    split_problem = split_reason(workload, arch, layout)
    if split_problem:
        reasons.append(split_problem)
    stages = training_stages(
        workload,
        arch,
        hw.gpus_per_node,
        layout,
        params,
        1.0 if cal is None else cal.activation_factor,
    )
    memory = fullest(stages)
    calibration: list[str] = []
    if cal is not None:
        calibration += cal.notes

    # --- the step
    tokens = float(workload.tokens or 0.0)
    seqs_per_step = layout.micro_batch * layout.grad_accum * layout.dp
    if workload.global_batch is not None and seqs_per_step != workload.global_batch:
        notes.append(
            f"global batch {seqs_per_step} sequences (micro-batch × accumulation × DP) "
            f"differs from the requested {workload.global_batch}"
        )
    tokens_per_step = float(seqs_per_step * workload.seq_len)
    steps = max(1, math.ceil(tokens / tokens_per_step))
    peak = peak_flops(card, fmt, reasons)
    shape = step_shape(workload, arch, hw, layout, params)
    eff = efficiency_of(card)
    per_token = model_flops_per_token(arch, workload)
    step = training_step(arch, shape, hw, eff, framework(params, shape.schedule))
    if shape.schedule == "dualpipe" and arch.is_moe and not params.ep_comm_overlap:
        notes.append(
            "DualPipe overlaps the expert-parallel all-to-alls with the paired chunk's "
            "compute (DeepSeek-V3 §3.2.1): they are hidden here, on the SMs the "
            "communication kernels leave free"
        )
    if cal is not None:
        moved = transfer(cal, card, fmt)
        calibration.append(moved.note)
        step = calibrated_step(step, moved.factor)
    step_s = step.step_s
    comm_fraction = step.communication_s / step_s if step_s > 0 and math.isfinite(step_s) else 1.0
    if not math.isfinite(step_s):
        reasons.append(
            f"a collective has no link to run on ({step.dp_link}): "
            f"{hw.label or card.id} cannot carry this layout"
        )

    # --- checkpoint (MTP modules are trained, so saved with the model)
    size = training_checkpoint(
        kind=workload.kind,
        params=arch.params + sum(mtp_trained_params(workload, arch)),
        adapter_params=shape.trained_dense if shape.frozen_base else 0.0,
        precision=workload.precision,
        optimizer=workload.optimizer,
    )
    stage = SHARDING_STAGE[layout.sharding]
    if stage >= 1 or isinstance(workload, FineTuneWorkload):
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
    time_s = steps * step_s + stall.stall_s
    finite = time_s > 0 and math.isfinite(time_s)
    stall_fraction = stall.stall_s / time_s if finite else 1.0
    model_flops = per_token * tokens
    # MTP work is executed (HFU) but not the model's (MFU's numerator, PaLM's convention).
    executed = model_flops + mtp_flops_per_token(arch, workload) * tokens
    executed += step.recompute_flops * layout.gpus * steps
    mfu = model_flops / (time_s * gpus * peak) if finite else 0.0
    hfu = executed / (time_s * gpus * peak) if finite else 0.0
    planned = planned_overheads(workload, shape.stack, step, steps, tokens_per_step)
    run = goodput(
        steady_s=time_s,
        stall_s=stall.stall_s,
        gpus=gpus,
        step_s=step_s,
        interval_steps=params.checkpoint_interval_steps,
        save_s=stall.save_time_s,
        inputs=replace(goodput_inputs(workload), evaluation_s=planned[0], rampup_s=planned[1]),
    )
    if finite and not run.finishes:
        reasons.append(_never_finishes(run, gpus))

    # --- classification and checks on the result
    elem = 4.0 if fmt == "tf32" else 2.0
    intensity = training_intensity(
        arch, seq=workload.seq_len, micro_batch=layout.micro_batch, tp=layout.tp, elem=elem
    )
    ridge = peak / (card.memory_bandwidth_gbs * 1e9)
    if comm_fraction > params.comm_threshold:
        bottleneck = "communication"
        notes.append(
            f"communication-bound: exposed communication is {pct(comm_fraction)} of step time, "
            f"above H11's {params.comm_threshold:.0%} (mostly {_culprit(step)})"
        )
    elif intensity < ridge:
        bottleneck = "memory_bandwidth"
    else:
        bottleneck = "compute"
    if stall_fraction > params.checkpoint_stall_max_fraction:
        reasons.append(
            f"checkpoint stall {pct(stall_fraction)} of training time exceeds "
            f"{params.checkpoint_stall_max_fraction:.0%} (H16): saving {gb(size.full_bytes)} "
            f"at {hw.storage_write_gbs:g} GB/s per node takes {stall.save_time_s:,.0f} s "
            f"every {params.checkpoint_interval_steps} steps"
        )
    if 0 < mfu < params.mfu_floor and finite:
        notes.append(
            f"MFU {mfu:.2f} is below H12's {params.mfu_floor:.2f} floor: most of the time goes "
            f"to {_largest_loss(step)}"
        )
    if mfu > params.mfu_ceiling and finite and cal is None:
        notes.append(
            f"MFU {mfu:.2f} is above H12's healthy {params.mfu_ceiling:.0%}: the step "
            "model credits this layout with more than published runs of its class reach; "
            "measure a short run (`measured:`) before relying on its hours"
        )
    notes += _checks(step, layout)
    meets = True
    if workload.deadline_hours is not None:
        meets = run.total_s <= workload.deadline_hours * SECONDS_PER_HOUR

    return ConfigEstimate.build(
        workload,
        arch,
        hw,
        layout,
        params,
        memory=memory,
        flops=executed,
        model_flops=model_flops,
        time_to_train_s=run.total_s if finite else time_s,
        step_time_s=step_s,
        steps=steps,
        tokens_per_s=tokens / time_s if finite else 0.0,
        mfu=mfu,
        hfu=hfu,
        comm_fraction=comm_fraction,
        step=step,
        checkpoint=size,
        checkpoint_stall_fraction=stall_fraction,
        bottleneck=bottleneck,
        arithmetic_intensity=intensity,
        ridge_point=ridge,
        meets_deadline=meets,
        reasons=reasons,
        notes=notes,
        measured=cal is not None,
        calibration=calibration,
        stages=stages,
        goodput=run,
    )


def _never_finishes(run: Goodput, gpus: int) -> str:
    per_hour = run.failures_per_gpu_hour * gpus
    return (
        f"at {run.failures_per_gpu_hour:.2e} interruptions per GPU-hour the {gpus}-GPU job "
        f"stops {per_hour:.2f} times an hour and loses {run.interval_s / 2 / 60:.0f} min of work "
        f"plus a {run.restart_each_s / 60:.0f} min restart each time: it never finishes "
        "(checkpoint more often or restart faster, `goodput:`)"
    )


_COMM_NAMES = {
    "dp_comm": "data-parallel gradient/parameter traffic",
    "tp_comm": "tensor-parallel collectives (H09)",
    "pp_comm": "pipeline stage boundaries",
    "ep_comm": "expert-parallel all-to-all",
    "cp_comm": "context-parallel K/V exchange",
}


def _culprit(step: StepBreakdown) -> str:
    parts = step.parts()
    key = max(_COMM_NAMES, key=lambda k: parts[k])
    link = {
        "dp_comm": step.dp_link,
        "tp_comm": step.tp_link,
        "pp_comm": step.pp_link,
        "ep_comm": step.ep_link,
    }.get(key)
    return _COMM_NAMES[key] + (f" over {link}" if link and link != "none" else "")


def _largest_loss(step: StepBreakdown) -> str:
    parts = {k: v for k, v in step.parts().items() if k != "compute"}
    key = max(parts, key=lambda k: parts[k])
    return {
        "recompute": "recomputation",
        "bubble": "the pipeline bubble",
        "optimizer": "the optimizer step",
    }.get(key, _COMM_NAMES.get(key, key))


def _checks(step: StepBreakdown, layout: Layout) -> list[str]:
    """H10 and H15 as checks on the computed step."""
    out: list[str] = []
    if layout.checkpointing == "full" and step.compute_s > 0:
        extra = step.recompute_s / step.compute_s
        lo, hi = H10_RECOMPUTE_BAND
        if not lo <= extra <= hi:
            out.append(
                f"full recomputation adds {extra:.0%} to compute here (H10 expects {lo:.0%}-"
                f"{hi:.0%})"
            )
    if layout.zero_stage >= 3 and layout.nodes == 1 and step.step_s > 0:
        loss = step.dp_comm_s / step.step_s
        if loss > H15_ZERO3_LOSS:
            out.append(
                f"ZeRO-3 parameter gathers cost {loss:.0%} of step time, above H15's "
                f"{H15_ZERO3_LOSS:.0%} (ZeRO-1/2 or tensor parallelism may train faster)"
            )
    return out
