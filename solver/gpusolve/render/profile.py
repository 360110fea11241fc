"""Plain-text `gpusolve profile` report: per GPU and overall, what bounds the job."""

from __future__ import annotations

from gpusolve.models.profile import GpuProfile, ProfileReport, Stat


def _s(stat: Stat, unit: str, digits: int = 0) -> str:
    if stat.mean is None:
        return "n/a"
    lo, hi = stat.min or 0.0, stat.max or 0.0
    return f"{stat.mean:.{digits}f}{unit} ({lo:.{digits}f}-{hi:.{digits}f})"


def _row(p: GpuProfile) -> list[str]:
    time = f", {p.seconds:.0f} s" if p.seconds is not None else ""
    tdp = f", {p.power_of_tdp:.0%} of TDP" if p.power_of_tdp is not None else ""
    return [
        f"GPU {p.gpu}: {p.bound.replace('_', '-')} ({p.samples} samples{time})",
        f"  sm {_s(p.sm_pct, '%')}, mem {_s(p.mem_pct, '%')}, memory used "
        f"{_s(p.fb_used_gb, ' GB', 1)}",
        f"  power {_s(p.power_w, ' W')}{tdp}; temperature {_s(p.gpu_temp_c, ' °C')}, "
        f"memory {_s(p.memory_temp_c, ' °C')}",
        f"  SM clock {_s(p.sm_clock_mhz, ' MHz')}, under load {_s(p.loaded_sm_clock_mhz, ' MHz')}"
        f"; violations: power {_s(p.power_violation_pct, '%')}, thermal "
        f"{p.thermal_violation_samples} sample(s)",
        f"  {p.why}",
    ]


def profile_text(report: ProfileReport) -> str:
    card = f" on {report.card}" if report.card else ""
    lines = [f"{report.source}: nvidia-smi {report.format} log{card}, {len(report.gpus)} GPU(s)"]
    for p in report.gpus:
        lines += _row(p)
    if len(report.gpus) > 1:
        lines += _row(report.overall)
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
