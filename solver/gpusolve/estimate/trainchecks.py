"""Checks on a computed training step, reported as notes or reasons, never inputs: H10's
20-30% recompute cost, H11's communication share, H12's healthy MFU band, H15's ZeRO-3 loss,
H16's checkpoint stall, and a run that never finishes between interruptions."""

from __future__ import annotations

from gpusolve.estimate.checkpoint import CheckpointSize, CheckpointStall
from gpusolve.estimate.goodput import Goodput
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout, gb, pct
from gpusolve.estimate.stepshape import StepBreakdown
from gpusolve.models.params import Params

# H10: "gradient checkpointing ... adds 20-30% time"; H15: a ZeRO-3 loss within 10% is
# excellent. Checks on the computed result, printed as notes.
H10_RECOMPUTE_BAND = (0.20, 0.30)
H15_ZERO3_LOSS = 0.10


def communication_note(step: StepBreakdown, comm_fraction: float, params: Params) -> str | None:
    """H11: a layout whose exposed communication passes the threshold is communication-bound."""
    if comm_fraction <= params.comm_threshold:
        return None
    return (
        f"communication-bound: exposed communication is {pct(comm_fraction)} of step time, "
        f"above H11's {params.comm_threshold:.0%} (mostly {_culprit(step)})"
    )


def stall_reason(
    stall_fraction: float,
    size: CheckpointSize,
    stall: CheckpointStall,
    hw: Hardware,
    params: Params,
) -> str | None:
    """H16: synchronous saves that stall more than the allowed share of the run."""
    if stall_fraction <= params.checkpoint_stall_max_fraction:
        return None
    return (
        f"checkpoint stall {pct(stall_fraction)} of training time exceeds "
        f"{params.checkpoint_stall_max_fraction:.0%} (H16): saving {gb(size.full_bytes)} "
        f"at {hw.storage_write_gbs:g} GB/s per node takes {stall.save_time_s:,.0f} s "
        f"every {params.checkpoint_interval_steps} steps"
    )


def mfu_notes(mfu: float, step: StepBreakdown, params: Params, measured: bool) -> list[str]:
    """H12's band as a check: below the floor, the largest loss; above the ceiling without a
    measured run, a warning that the hours are optimistic."""
    out: list[str] = []
    if 0 < mfu < params.mfu_floor:
        out.append(
            f"MFU {mfu:.2f} is below H12's {params.mfu_floor:.2f} floor: most of the time goes "
            f"to {_largest_loss(step)}"
        )
    if mfu > params.mfu_ceiling and not measured:
        out.append(
            f"MFU {mfu:.2f} is above H12's healthy {params.mfu_ceiling:.0%}: the step "
            "model credits this layout with more than published runs of its class reach; "
            "measure a short run (`measured:`) before relying on its hours"
        )
    return out


def never_finishes(run: Goodput, gpus: int) -> str:
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


def step_checks(step: StepBreakdown, layout: Layout) -> list[str]:
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
