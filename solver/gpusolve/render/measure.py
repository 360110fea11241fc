"""Plain-text `gpusolve measure` output: notes and comparisons as comments, then the block."""

from __future__ import annotations

from pathlib import Path

from gpusolve.models.measure import MeasureReport


def measure_text(report: MeasureReport, written_to: Path | None, workload: str) -> str:
    from gpusolve.measure.block import block_lines

    lines = [f"# note: {note}" for note in report.notes]
    s, f = report.counted_states, report.formula_states
    lines.append(
        f"# model states: PyTorch holds {s.weights + s.gradients + s.optimizer:,.0f} bytes, "
        f"the physics says {f.weights + f.gradients + f.optimizer:,.0f}"
    )
    lines.append(
        f"# activations saved for backward: {report.saved_activation_bytes:,.0f} bytes, the "
        f"formula says {report.formula_activation_bytes:,.0f}"
    )
    lines.append(f"# {report.tokens_per_s:,.1f} tokens/s on {report.device}")
    if report.measured is not None:
        lines.append("\n".join(block_lines(report.measured, 0)))
        if written_to is not None:
            lines.append(f"# written into {written_to} (workload {workload})")
    return "\n".join(lines) + "\n"
