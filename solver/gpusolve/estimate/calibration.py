"""A measured run (H12) calibrates the physics' own parameters, which then apply on every card.

The step-time model times each kernel at an achievable fraction of the card's peak
(efficiency.py: MAMF over peak, FlashAttention's fraction, streaming bandwidth). A measured
run says how far that model is off *for this workload and software stack*:

  measured MFU   m = tokens/s per GPU x model FLOPs per token / peak of the measured card
                 (or the `mfu` the run reported, against the same dense peak);
  modelled MFU   q = the same model FLOPs over the modelled compute phase (compute,
                 recomputation, pipeline bubble and optimizer step, communication left out)
                 of the measured run's own layout on the measured card;
  factor         k = m / q.

The calibrated achievable compute fractions of the measured card's family are the
datasheet-derived ones times k. Transfer (the documented mechanism):

  same family    the measured efficiency itself: the card runs at k x its family's fractions,
                 so at the measured layout it reproduces m exactly;
  other family   the ratio of their parameters: calibrated fraction(target) =
                 calibrated fraction(measured) x default(target) / default(measured), which is
                 again k x the target's own fractions.

So every compute-phase second of the model is divided by k, capped so that no calibrated GEMM
fraction exceeds 1 (a run measured on an old stack cannot promise more than the peak).
Communication stays modelled on every card: the short run's communication, exposed or not, is
inside m, so a plan on more GPUs than measured is charged for its own extra traffic by the
physics (a conservative double count of what the measured run already exposed).

Memory: the measured peak per GPU less the model states the formula gives for the measured
layout is what the run's activations took; over the modelled activations of that layout it
is the activation factor a, multiplied into every layout's activation estimate (the states
are exact, tests/test_measure*.py). `peak_memory_gb` is what the process held (the caching
allocator's reserve), so the runtime overhead is not subtracted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpusolve.estimate.compute import compute_precision
from gpusolve.estimate.efficiency import efficiency_of, family_of, gemm_shape_factor, mamf_fraction
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import StepBreakdown
from gpusolve.estimate.steptime import training_step
from gpusolve.estimate.trainshape import (
    framework,
    model_flops_per_token,
    step_shape,
    training_activations_for,
    training_states_for,
)
from gpusolve.estimate.units import GB
from gpusolve.models.catalog import Card
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, Training, Workload

# A measured activation peak is taken between these multiples of the formula's (outside them
# the measurement is of a different configuration than the one described).
ACTIVATION_FACTOR_RANGE = (0.1, 10.0)


@dataclass(frozen=True)
class Calibration:
    """What one measured run says about the physics, for one workload."""

    card: str  # the measured card
    family: str
    gpus: int
    layout: Layout  # the measured run's layout, as the model reads it
    measured_mfu: float | None
    modelled_mfu: float | None
    compute_factor: float  # k: multiplies every achievable compute fraction (1 = no change)
    activation_factor: float  # a: multiplies every activation estimate (1 = no change)
    measured_activations_bytes: float | None
    modelled_activations_bytes: float | None
    notes: tuple[str, ...]


def measured_layout(workload: Training) -> Layout:
    """The measured run's layout: its tp x pp x dp on `gpus`, micro-batch, sharding and
    recomputation (each defaulting to the workload's); gradient accumulation up to the
    workload's global batch (the run is assumed to use it), else one micro-batch per step."""
    m = workload.measured
    assert m is not None
    dp = m.gpus // (m.tp * m.pp)
    micro = m.micro_batch or workload.micro_batch
    accum = max(1, (workload.global_batch or 0) // (micro * dp))
    return Layout(
        nodes=1,  # one board of `gpus` GPUs: only the compute phase is compared (no links)
        tp=m.tp,
        pp=m.pp,
        dp=dp,
        sharding=m.sharding or workload.sharding or "ddp",
        checkpointing=m.checkpointing or workload.gradient_checkpointing or "none",
        micro_batch=micro,
        grad_accum=accum,
    )


def measured_workload(workload: Training) -> Training:
    """The workload as it ran when measured (its own sequence length), without `measured`."""
    m = workload.measured
    assert m is not None
    update: dict[str, object] = {"measured": None}
    if m.seq_len is not None:
        update["seq_len"] = m.seq_len
    return workload.model_copy(update=update)


def measured_mfu_of(workload: Training, card: Card, model_flops_per_token: float) -> float | None:
    """H12's MFU of the run: the reported one, else tokens/s (or samples/s x seq_len) per GPU
    x model FLOPs per token over the card's dense peak in the workload's GEMM format."""
    m = workload.measured
    assert m is not None
    if m.mfu is not None:
        return m.mfu
    seq = m.seq_len or workload.seq_len
    rate = m.tokens_per_s if m.tokens_per_s is not None else None
    if rate is None and m.samples_per_s is not None:
        rate = m.samples_per_s * seq
    if rate is None:
        return None
    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    peak = (card.tflops_at(fmt) or card.tflops.fp32) * 1e12
    return rate / m.gpus * model_flops_per_token / peak


def compute_phase_s(step: StepBreakdown) -> float:
    """The part of a step the achievable compute fractions set: everything but the exposed
    communication."""
    return step.compute_s + step.recompute_s + step.bubble_s + step.optimizer_s


def calibrate(workload: Training, arch: Arch, card: Card, params: Params) -> Calibration:
    """The calibration one measured run gives (pure; training workloads)."""
    m = workload.measured
    assert m is not None
    run = measured_workload(workload)
    lay = measured_layout(workload)
    hw = Hardware.generic(card, gpus_per_node=max(8, m.gpus))
    notes: list[str] = list(m.profile_notes)
    family = family_of(card)
    per_token = model_flops_per_token(arch, run)
    mfu = measured_mfu_of(workload, card, per_token)
    factor = 1.0
    modelled: float | None = None
    if mfu is not None and mfu <= 0:
        notes.append("measured MFU is 0: the compute model is left as it is")
        mfu = None
    if mfu is not None:
        step = training_step(
            arch, step_shape(run, arch, hw, lay, params), hw, efficiency_of(card), framework(params)
        )
        fmt = compute_precision(run.kind, run.precision, run.optimizer)
        peak = (card.tflops_at(fmt) or card.tflops.fp32) * 1e12
        tokens = lay.micro_batch * lay.grad_accum * lay.dp * run.seq_len
        phase = compute_phase_s(step)
        if phase > 0 and math.isfinite(phase):
            modelled = per_token * tokens / (lay.gpus * peak * phase)
            factor = mfu / modelled
            notes.append(
                f"measured MFU {mfu:.1%} on {m.card} ({m.gpus} GPU(s)) against the model's "
                f"{modelled:.1%} for that run: the {family} family's achievable compute "
                f"fractions x {factor:.3g} (H12)"
            )
        if mfu < params.mfu_floor:
            notes.append(
                f"measured MFU {mfu:.1%} is below H12's {params.mfu_floor:.0%}: the measured "
                "configuration is probably wrong (data loading, micro-batch, kernels); the "
                "plan sizes from it anyway"
            )
        elif mfu > params.mfu_ceiling:
            notes.append(
                f"measured MFU {mfu:.1%} is above H12's healthy {params.mfu_ceiling:.0%}: "
                "check the measurement (tokens counted twice, padding, a peak in the wrong "
                "format)"
            )
    states = training_states_for(run, arch, hw.gpus_per_node, lay, params).total_bytes
    act_model = training_activations_for(run, arch, hw.gpus_per_node, lay)
    act_factor = 1.0
    act_measured: float | None = None
    if m.peak_memory_gb is not None and m.peak_memory_gb * GB <= states:
        notes.append(
            f"measured peak {m.peak_memory_gb:.1f} GB per GPU is below the {states / GB:.1f} GB "
            f"of model states the formula gives for the measured layout ({lay.sharding}, TP "
            f"{lay.tp}, PP {lay.pp}): give the run's sharding, tp and pp in `measured:`; the "
            "activation estimate is left as it is"
        )
    elif m.peak_memory_gb is not None and act_model > 0:
        act_measured = m.peak_memory_gb * GB - states
        lo, hi = ACTIVATION_FACTOR_RANGE
        act_factor = min(hi, max(lo, act_measured / act_model))
        notes.append(
            f"measured peak {m.peak_memory_gb:.1f} GB per GPU less {states / GB:.1f} GB of "
            f"model states: activations {act_measured / GB:.1f} GB against the formula's "
            f"{act_model / GB:.1f} GB, every activation estimate x {act_factor:.2f} (H12)"
        )
    return Calibration(
        card=m.card,
        family=family,
        gpus=m.gpus,
        layout=lay,
        measured_mfu=mfu,
        modelled_mfu=modelled,
        compute_factor=factor,
        activation_factor=act_factor,
        measured_activations_bytes=act_measured,
        modelled_activations_bytes=act_model,
        notes=tuple(notes),
    )


def calibration_for(
    workload: Workload, arch: Arch, params: Params, fallback: Card
) -> Calibration | None:
    """The workload's calibration, memoised on its `measured` block per parameter set. The
    measured card is the one the loader bound, else `fallback` when the ids match; None for
    inference, without a measured block, or with a card that cannot be resolved."""
    if isinstance(workload, InferenceWorkload) or workload.measured is None:
        return None
    m = workload.measured
    card = m.bound_card
    if card is None and fallback.id == m.card:
        card = fallback
    if card is None:
        return None
    cache = m.calibrations
    found = cache.get(params)
    if not isinstance(found, Calibration):
        found = calibrate(workload, arch, card, params)
        cache[params] = found
    return found


@dataclass(frozen=True)
class Transfer:
    """The calibration as it applies to one target card."""

    factor: float  # divides the compute phase
    note: str


def transfer(cal: Calibration, target: Card, fmt: str) -> Transfer:
    """The documented mechanism (module docstring): same family, the measured efficiency;
    another family, the ratio of the two families' parameters; capped at a GEMM fraction of 1."""
    eff = efficiency_of(target)
    gemm = mamf_fraction(target, eff, fmt) * gemm_shape_factor(eff.family)
    cap = 1.0 / gemm if gemm > 0 else math.inf
    factor = min(cal.compute_factor, cap)
    family = family_of(target)
    calibrated = gemm * factor
    if target.id == cal.card:
        how = "measured on this card"
    elif family == cal.family:
        how = f"same family as the measured {cal.card} ({family}): its measured efficiency"
    else:
        how = (
            f"transferred from {cal.card} ({cal.family}) to the {family} family by the ratio "
            "of their achievable fractions"
        )
    capped = " (capped at the peak)" if factor < cal.compute_factor else ""
    note = (
        f"calibrated compute: {how}; GEMM fraction {gemm:.0%} x {factor:.3g} = "
        f"{calibrated:.0%} of peak{capped}"
    )
    return Transfer(factor=factor, note=note)


def calibrated_step(step: StepBreakdown, factor: float) -> StepBreakdown:
    """The step with its compute phase divided by the calibration factor."""
    if factor == 1.0:
        return step
    return replace(
        step,
        compute_s=step.compute_s / factor,
        recompute_s=step.recompute_s / factor,
        bubble_s=step.bubble_s / factor,
        optimizer_s=step.optimizer_s / factor,
    )
