"""The documents' rules of thumb, computed as stated and labelled as such.

They are printed next to the formula figures, never used for feasibility:
  * H05: mixed-precision Adam needs ≈ 16–24 bytes per parameter ("a 7B model needs
    ≥ 112 GB"), for full training;
  * H30: minimum GB = parameters in billions × factor (full fine-tune 12–20, LoRA 4–6,
    inference 2–4; the factors are `Params.thumb_factor_*`), worked example H38:
    7 × 20 ≈ 140 GB full fine-tune, 7 × 6 ≈ 42 GB LoRA.
Both are whole-model figures (not per GPU), GB = 10^9 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.units import GB
from gpusolve.models.params import Params

H05_BYTES_PER_PARAM = (16.0, 24.0)
H30_RANGES: dict[str, tuple[float, float]] = {
    "full fine-tune": (12.0, 20.0),
    "LoRA": (4.0, 6.0),
    "inference": (2.0, 4.0),
}


@dataclass(frozen=True)
class ThumbFigures:
    """Rule-of-thumb memory for the whole model, bytes."""

    h30_class: str  # "full fine-tune" | "LoRA" | "inference"
    h30_factor: float  # GB per billion parameters
    h30_range: tuple[float, float]
    h30_bytes: float
    h05_low_bytes: float | None  # full training only
    h05_high_bytes: float | None

    def describe(self, params_b: float) -> list[str]:
        lo, hi = self.h30_range
        lines = [
            f"rule of thumb H30 ({self.h30_class} × {self.h30_factor:g}, documents say "
            f"{lo:g}–{hi:g}): {params_b:.3g} × {self.h30_factor:g} = {self.h30_bytes / GB:.0f} GB"
        ]
        if self.h05_low_bytes is not None and self.h05_high_bytes is not None:
            lines.append(
                f"rule of thumb H05 (16–24 B/param): {self.h05_low_bytes / GB:.0f}–"
                f"{self.h05_high_bytes / GB:.0f} GB"
            )
        return lines


def h30_bytes(params_b: float, factor: float) -> float:
    """H30: parameters (billions) × factor = minimum GB."""
    return params_b * factor * GB


def h05_range_bytes(params_b: float) -> tuple[float, float]:
    """H05: 16–24 bytes per parameter for mixed-precision Adam."""
    n = params_b * 1e9
    return n * H05_BYTES_PER_PARAM[0], n * H05_BYTES_PER_PARAM[1]


def thumb_class(kind: str) -> str:
    if kind in ("lora", "qlora"):
        return "LoRA"
    if kind == "inference":
        return "inference"
    return "full fine-tune"  # pretraining has the same per-parameter states


def thumb_figures(params_b: float, kind: str, params: Params) -> ThumbFigures:
    cls = thumb_class(kind)
    factor = {
        "full fine-tune": params.thumb_factor_full_finetune,
        "LoRA": params.thumb_factor_lora,
        "inference": params.thumb_factor_inference,
    }[cls]
    low: float | None = None
    high: float | None = None
    if cls == "full fine-tune":
        low, high = h05_range_bytes(params_b)
    return ThumbFigures(cls, factor, H30_RANGES[cls], h30_bytes(params_b, factor), low, high)
