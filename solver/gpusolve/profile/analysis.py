"""Summaries of a parsed nvidia-smi log and H11's reading of them.

Every summary is time-weighted: a sample stands for the time until the same GPU's next sample
(the last one for the median interval); an untimestamped dmon log weighs its cycles equally
(dmon prints one line per GPU per `-d` interval). Classification, per GPU, from the
time-weighted mean SM and memory-controller activity (thresholds are rule parameters,
params.py):

  compute-bound ........ sm >= profile_compute_sm_min and mem < profile_compute_mem_max (H11)
  memory-bandwidth ..... mem >= profile_membw_mem_min (H11: "mem about 90% with sm about 60%")
  stalled .............. sm < profile_stall_sm_max: the GPU waits on input or communication
                         (H04: >90% utilisation is compute-saturated; below, data or
                         collectives starve it; dmon cannot tell which)
  idle ................. sm under 5%: nothing ran
  mixed ................ anything else.

Warnings: a temperature above `thermal_warning_c` or a loaded SM clock more than
`clock_drop_fraction` below the run's highest loaded clock (H17), thermal/power violation
samples, memory use above the card's memory less the headroom (H29).
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable

from gpusolve.estimate.units import GB
from gpusolve.models.catalog import Card
from gpusolve.models.params import Params
from gpusolve.models.profile import Bound, GpuProfile, ProfileReport, Stat
from gpusolve.profile.logs import Log, Sample

IDLE_SM_PCT = 5.0
MIB = 2**20
# SM activity from which a sample counts as "under load" for clock-drop checks.
LOADED_SM_PCT = 50.0


def weights(samples: list[Sample]) -> list[float]:
    """Seconds each sample of ONE GPU stands for (1 each without timestamps)."""
    times = [s.time_s for s in samples]
    if any(t is None for t in times) or len(samples) < 2:
        return [1.0] * len(samples)
    stamps = [float(t) for t in times if t is not None]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    positive = [g for g in gaps if g > 0]
    typical = statistics.median(positive) if positive else 1.0
    # A gap far beyond the interval (the monitor paused, logs concatenated) counts once.
    out = [min(g, 4 * typical) if g > 0 else 0.0 for g in gaps]
    out.append(typical)
    return out


def stat(values: Iterable[tuple[float | None, float]]) -> Stat:
    pairs = [(v, w) for v, w in values if v is not None]
    if not pairs:
        return Stat()
    total = sum(w for _, w in pairs)
    mean = sum(v * w for v, w in pairs) / total if total > 0 else pairs[0][0]
    return Stat(
        mean=round(mean, 3),
        min=min(v for v, _ in pairs),
        max=max(v for v, _ in pairs),
    )


def _metric(samples: list[Sample], w: list[float], key: str, scale: float = 1.0) -> Stat:
    return stat(
        (None if s.values.get(key) is None else float(s.values[key] or 0.0) * scale, wt)
        for s, wt in zip(samples, w, strict=True)
    )


def classify(sm_pct: float | None, mem_pct: float | None, params: Params) -> tuple[Bound, str]:
    """H11 (and H04) on the mean activities, in percent."""
    if sm_pct is None:
        return "mixed", "the log has no SM activity column (record with -s u)"
    sm, mem = sm_pct / 100.0, (mem_pct or 0.0) / 100.0
    if sm_pct < IDLE_SM_PCT:
        return "idle", f"SM activity {sm_pct:.0f}%: nothing ran"
    if sm >= params.profile_compute_sm_min and mem < params.profile_compute_mem_max:
        return "compute", (
            f"sm {sm:.0%} >= {params.profile_compute_sm_min:.0%} with mem {mem:.0%} < "
            f"{params.profile_compute_mem_max:.0%}: compute-bound (H11)"
        )
    if mem >= params.profile_membw_mem_min:
        return "memory_bandwidth", (
            f"mem {mem:.0%} >= {params.profile_membw_mem_min:.0%} with sm {sm:.0%}: "
            "memory-bandwidth-bound (H11)"
        )
    if sm < params.profile_stall_sm_max:
        return "stalled", (
            f"sm {sm:.0%} < {params.profile_stall_sm_max:.0%}: the GPU waits on input or "
            "communication (H04, H11; the log cannot tell which: check the data loader and "
            "all_reduce time)"
        )
    return "mixed", (
        f"sm {sm:.0%}, mem {mem:.0%}: neither compute- nor memory-bound by H11's thresholds"
    )


def gpu_profile(
    gpu: str, samples: list[Sample], w: list[float], card: Card | None, params: Params
) -> GpuProfile:
    sm = _metric(samples, w, "sm_pct")
    mem = _metric(samples, w, "mem_pct")
    power = _metric(samples, w, "power_w")
    loaded = [(s, wt) for s, wt in zip(samples, w, strict=True) if _loaded(s)]
    loaded_clock = stat((s.values.get("sm_clock_mhz"), wt) for s, wt in loaded)
    bound, why = classify(sm.mean, mem.mean, params)
    timed = all(s.time_s is not None for s in samples)
    return GpuProfile(
        gpu=gpu,
        samples=len(samples),
        seconds=round(sum(w), 3) if timed else None,
        sm_pct=sm,
        mem_pct=mem,
        fb_used_gb=_metric(samples, w, "fb_used_mib", MIB / GB),
        power_w=power,
        power_of_tdp=(
            round(power.mean / card.tdp_w, 3) if card is not None and power.mean else None
        ),
        gpu_temp_c=_metric(samples, w, "gpu_temp_c"),
        memory_temp_c=_metric(samples, w, "memory_temp_c"),
        sm_clock_mhz=_metric(samples, w, "sm_clock_mhz"),
        loaded_sm_clock_mhz=loaded_clock,
        mem_clock_mhz=_metric(samples, w, "mem_clock_mhz"),
        power_violation_pct=_metric(samples, w, "power_violation_pct"),
        thermal_violation_samples=sum(
            1 for s in samples if (s.values.get("thermal_violation") or 0.0) > 0
        ),
        pcie_rx_mbs=_metric(samples, w, "pcie_rx_mbs"),
        pcie_tx_mbs=_metric(samples, w, "pcie_tx_mbs"),
        bound=bound,
        why=why,
    )


def _loaded(s: Sample) -> bool:
    sm = s.values.get("sm_pct")
    return sm is not None and sm >= LOADED_SM_PCT


def warnings_for(
    p: GpuProfile, samples: list[Sample], card: Card | None, params: Params
) -> list[str]:
    out: list[str] = []
    who = f"GPU {p.gpu}"
    hot = p.gpu_temp_c.max
    if hot is not None and hot > params.thermal_warning_c:
        over = sum(
            1 for s in samples if (s.values.get("gpu_temp_c") or 0) > params.thermal_warning_c
        )
        out.append(
            f"{who} reached {hot:.0f} °C ({over} sample(s) above {params.thermal_warning_c:.0f} "
            "°C): the boost clock drops above that; plan cooling, not paper peak (H17)"
        )
    clock = p.loaded_sm_clock_mhz
    if clock.max and clock.min is not None:
        floor = clock.max * (1 - params.clock_drop_fraction)
        if clock.min < floor:
            out.append(
                f"{who}'s SM clock under load fell to {clock.min:.0f} MHz from {clock.max:.0f} "
                f"MHz (more than {params.clock_drop_fraction:.0%}): thermal or power "
                "throttling (H17)"
            )
    if p.thermal_violation_samples:
        out.append(f"{who} reports a thermal violation in {p.thermal_violation_samples} sample(s)")
    pviol = p.power_violation_pct.max
    if pviol:
        out.append(f"{who} was power-capped (pviol up to {pviol:.0f}%): clocks held below boost")
    used = p.fb_used_gb.max
    total = _memory_total_gb(samples, card)
    if used is not None and total:
        allowed = total * (1 - params.headroom)
        if used > allowed:
            out.append(
                f"{who} used {used:.1f} GB of {total:.1f} GB, above the {params.headroom:.0%} "
                "headroom H29 keeps free (fragmentation, a second process, a longer batch "
                "would run out)"
            )
    return out


def _memory_total_gb(samples: list[Sample], card: Card | None) -> float | None:
    if card is not None:
        return card.reported_memory_bytes / GB
    totals = [s.values.get("fb_total_mib") for s in samples]
    known = [t for t in totals if t]
    return max(known) * MIB / GB if known else None


def profile(log: Log, card: Card | None, params: Params) -> ProfileReport:
    by_gpu: dict[str, list[Sample]] = defaultdict(list)
    for s in log.samples:
        by_gpu[s.gpu].append(s)
    notes = list(log.notes)
    gpus: list[GpuProfile] = []
    warnings: list[str] = []
    all_samples: list[Sample] = []
    all_weights: list[float] = []
    for gpu, samples in sorted(by_gpu.items(), key=lambda kv: _gpu_order(kv[0])):
        if any(s.time_s is not None for s in samples):
            ordered = sorted(samples, key=lambda s: s.time_s or 0.0)
            if ordered != samples:
                notes.append(f"GPU {gpu}'s samples were out of time order and were sorted")
            samples = ordered
        w = weights(samples)
        p = gpu_profile(gpu, samples, w, card, params)
        gpus.append(p)
        warnings += warnings_for(p, samples, card, params)
        all_samples += samples
        all_weights += w
    overall = gpu_profile("all", all_samples, all_weights, card, params)
    if card is None:
        notes.append("no --card: power is not compared with a TDP, memory with the CSV's total")
    return ProfileReport(
        source=log.name,
        format="dmon" if log.format == "dmon" else "csv",
        columns=list(log.columns),
        card=card.id if card is not None else None,
        gpus=gpus,
        overall=overall,
        warnings=warnings,
        notes=notes,
    )


def _gpu_order(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)
