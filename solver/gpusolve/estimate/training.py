"""A training layout: memory per GPU, the step time from its parts, checkpoints.

`evaluate_training` composes memory.py (model states, activations), steptime.py (compute,
communication per collective, the pipeline bubble, recomputation, the optimizer step) and
checkpoint.py (H16), one step at a time, each returning its record (`_Timed`, `_Run`).
Nothing here assumes an MFU: MFU and HFU are what the step time gives. H12's healthy band
(40-60%, below 30% misconfigured), H10's 20-30% recompute cost, H11's 15% communication
threshold and H15's ZeRO-3 loss are checks on the result (trainchecks.py), reported as notes
or a bottleneck class, not inputs and not rejections.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpusolve.estimate.calibration import Calibration, calibrated_step, calibration_for, transfer
from gpusolve.estimate.checkpoint import (
    CheckpointSize,
    CheckpointStall,
    checkpoint_stall,
    training_checkpoint,
)
from gpusolve.estimate.compute import compute_precision, training_intensity
from gpusolve.estimate.efficiency import efficiency_of
from gpusolve.estimate.goodput import Goodput, GoodputInputs, evaluation_s, goodput, rampup_s
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import (
    ConfigEstimate,
    Layout,
    StageFigures,
    overhead_bytes,
    peak_flops,
    structure_reasons,
)
from gpusolve.estimate.memory import SHARDING_STAGE, MemoryBreakdown
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import StepBreakdown, StepShape
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainchecks import (
    communication_note,
    mfu_notes,
    never_finishes,
    stall_reason,
    step_checks,
)
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


@dataclass(frozen=True)
class _Timed:
    """One layout's step: its shape, its parts, and the run's step count."""

    shape: StepShape
    step: StepBreakdown
    steps: int
    tokens_per_step: float
    peak: float
    fmt: str

    @property
    def comm_fraction(self) -> float:
        s = self.step.step_s
        return self.step.communication_s / s if s > 0 and math.isfinite(s) else 1.0


@dataclass(frozen=True)
class _Run:
    """The run the step makes: time with checkpoint stalls, utilisation, goodput."""

    size: CheckpointSize
    stall: CheckpointStall
    time_s: float
    model_flops: float
    executed_flops: float
    goodput: Goodput

    @property
    def finite(self) -> bool:
        return self.time_s > 0 and math.isfinite(self.time_s)

    @property
    def stall_fraction(self) -> float:
        return self.stall.stall_s / self.time_s if self.finite else 1.0


def _opening_notes(workload: Training, arch: Arch) -> list[str]:
    notes: list[str] = list(arch.assumptions)
    if arch.coarse:
        notes.insert(0, arch.convention)
    if workload.kind not in ("lora", "qlora") and workload.precision in ("int8", "int4", "nf4"):
        notes.append(
            f"{workload.precision} full training is not a standard recipe; "
            "estimated as bf16 mixed precision"
        )
    return notes


def _batch_note(workload: Training, layout: Layout) -> list[str]:
    seqs_per_step = layout.micro_batch * layout.grad_accum * layout.dp
    if workload.global_batch is None or seqs_per_step == workload.global_batch:
        return []
    return [
        f"global batch {seqs_per_step} sequences (micro-batch × accumulation × DP) "
        f"differs from the requested {workload.global_batch}"
    ]


def _timed(
    workload: Training,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    cal: Calibration | None,
) -> tuple[_Timed, list[str], list[str], list[str]]:
    """The step (calibrated by a measured run), and its (notes, reasons, calibration notes)."""
    notes: list[str] = []
    reasons: list[str] = []
    calibration: list[str] = []
    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    tokens_per_step = float(layout.micro_batch * layout.grad_accum * layout.dp * workload.seq_len)
    steps = max(1, math.ceil(float(workload.tokens or 0.0) / tokens_per_step))
    peak = peak_flops(hw.card, fmt, reasons)
    shape = step_shape(workload, arch, hw, layout, params)
    step = training_step(arch, shape, hw, efficiency_of(hw.card), framework(params, shape.schedule))
    if shape.schedule == "dualpipe" and arch.is_moe and not params.ep_comm_overlap:
        notes.append(
            "DualPipe overlaps the expert-parallel all-to-alls with the paired chunk's "
            "compute (DeepSeek-V3 §3.2.1): they are hidden here, on the SMs the "
            "communication kernels leave free"
        )
    if cal is not None:
        moved = transfer(cal, hw.card, fmt)
        calibration.append(moved.note)
        step = calibrated_step(step, moved.factor)
    if not math.isfinite(step.step_s):
        reasons.append(
            f"a collective has no link to run on ({step.dp_link}): "
            f"{hw.label or hw.card.id} cannot carry this layout"
        )
    return _Timed(shape, step, steps, tokens_per_step, peak, fmt), notes, reasons, calibration


def _writers(workload: Training, hw: Hardware, layout: Layout) -> int:
    """Nodes writing a checkpoint in parallel: every node when states are sharded (or only
    adapters are saved), else the nodes of one model replica."""
    if SHARDING_STAGE[layout.sharding] >= 1 or isinstance(workload, FineTuneWorkload):
        writers = layout.nodes
    else:
        writers = math.ceil(layout.tp * layout.pp / hw.gpus_per_node)
    return min(writers, layout.nodes)


def _run(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params, t: _Timed
) -> _Run:
    """Checkpoints (MTP modules are trained, so saved with the model), the run's time and
    FLOPs, and its goodput."""
    size = training_checkpoint(
        kind=workload.kind,
        params=arch.params + sum(mtp_trained_params(workload, arch)),
        adapter_params=t.shape.trained_dense if t.shape.frozen_base else 0.0,
        precision=workload.precision,
        optimizer=workload.optimizer,
    )
    stall = checkpoint_stall(
        checkpoint_bytes=size.full_bytes,
        writers=_writers(workload, hw, layout),
        write_bytes_per_s=hw.storage_write_gbs * GB,
        steps=t.steps,
        interval_steps=params.checkpoint_interval_steps,
    )
    tokens = float(workload.tokens or 0.0)
    time_s = t.steps * t.step.step_s + stall.stall_s
    model_flops = model_flops_per_token(arch, workload) * tokens
    # MTP work is executed (HFU) but not the model's (MFU's numerator, PaLM's convention).
    executed = model_flops + mtp_flops_per_token(arch, workload) * tokens
    executed += t.step.recompute_flops * layout.gpus * t.steps
    planned = planned_overheads(workload, t.shape.stack, t.step, t.steps, t.tokens_per_step)
    run = goodput(
        steady_s=time_s,
        stall_s=stall.stall_s,
        gpus=layout.gpus,
        step_s=t.step.step_s,
        interval_steps=params.checkpoint_interval_steps,
        save_s=stall.save_time_s,
        inputs=replace(goodput_inputs(workload), evaluation_s=planned[0], rampup_s=planned[1]),
    )
    return _Run(size, stall, time_s, model_flops, executed, run)


def _bottleneck(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params, t: _Timed
) -> tuple[str, float, float]:
    """(class, arithmetic intensity, ridge point): communication past H11's threshold, else
    below the ridge memory-bound, else compute-bound."""
    elem = 4.0 if t.fmt == "tf32" else 2.0
    intensity = training_intensity(
        arch, seq=workload.seq_len, micro_batch=layout.micro_batch, tp=layout.tp, elem=elem
    )
    ridge = t.peak / (hw.card.memory_bandwidth_gbs * 1e9)
    if t.comm_fraction > params.comm_threshold:
        return "communication", intensity, ridge
    return ("memory_bandwidth" if intensity < ridge else "compute"), intensity, ridge


def evaluate_training(
    workload: Training, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> ConfigEstimate:
    """Memory of every rank, the step, the run and the checks on them, as one estimate."""
    reasons = structure_reasons(workload, arch, hw, layout, params)
    notes = _opening_notes(workload, arch)
    cal = calibration_for(workload, arch, params, hw.card)
    split_problem = split_reason(workload, arch, layout)
    if split_problem:
        reasons.append(split_problem)
    factor = 1.0 if cal is None else cal.activation_factor
    stages = training_stages(workload, arch, hw.gpus_per_node, layout, params, factor)
    calibration: list[str] = [] if cal is None else list(cal.notes)
    notes += _batch_note(workload, layout)
    t, step_notes, step_reasons, moved = _timed(workload, arch, hw, layout, params, cal)
    notes += step_notes
    reasons += step_reasons
    calibration += moved
    r = _run(workload, arch, hw, layout, params, t)
    if r.finite and not r.goodput.finishes:
        reasons.append(never_finishes(r.goodput, layout.gpus))
    denominator = r.time_s * layout.gpus * t.peak
    mfu = r.model_flops / denominator if r.finite else 0.0
    bottleneck, intensity, ridge = _bottleneck(workload, arch, hw, layout, params, t)
    comm = communication_note(t.step, t.comm_fraction, params)
    notes += [comm] if comm else []
    stalled = stall_reason(r.stall_fraction, r.size, r.stall, hw, params)
    reasons += [stalled] if stalled else []
    notes += mfu_notes(mfu, t.step, params, cal is not None) if r.finite else []
    notes += step_checks(t.step, layout)
    total_s = r.goodput.total_s if r.finite else r.time_s
    meets = workload.deadline_hours is None or (
        r.goodput.total_s <= workload.deadline_hours * SECONDS_PER_HOUR
    )
    return ConfigEstimate.build(
        workload,
        arch,
        hw,
        layout,
        params,
        memory=fullest(stages),
        flops=r.executed_flops,
        model_flops=r.model_flops,
        time_to_train_s=total_s,
        step_time_s=t.step.step_s,
        steps=t.steps,
        tokens_per_s=float(workload.tokens or 0.0) / r.time_s if r.finite else 0.0,
        mfu=mfu,
        hfu=r.executed_flops / denominator if r.finite else 0.0,
        comm_fraction=t.comm_fraction,
        step=t.step,
        checkpoint=r.size,
        checkpoint_stall_fraction=r.stall_fraction,
        bottleneck=bottleneck,
        arithmetic_intensity=intensity,
        ridge_point=ridge,
        meets_deadline=meets,
        reasons=reasons,
        notes=notes,
        measured=cal is not None,
        calibration=calibration,
        stages=stages,
        goodput=r.goodput,
    )
