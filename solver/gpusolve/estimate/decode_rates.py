"""Which measured decode-shaped GEMM set a card decodes at, and whose measurement it is.

A set holds for the cards of its family with the measured card's compute peak (within 10%):
its shares are of that peak, and the SMs and clocks behind it set the tile scheduling that
shapes them. A card's bandwidth enters through the serving model's weight-stream term, so an
H800 reads the H200 set and an A800 or A100 PCIe (312 BF16 TFLOP/s, other links or bandwidth)
the A100 SXM set, while an A10, an L20, an H20 or an RTX 5090 D (other peaks) keeps the
training rate and says so. CDNA3 and Ascend have no published decode-shaped GEMM sweep with
its card and unit stated (AIConfigurator's systems are NVIDIA only), and none could be measured
here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusolve.estimate.compute import EIGHT_BIT
from gpusolve.estimate.decode_gemm import HOPPER_SXM, MEASURED_SOURCE, DecodeGemm
from gpusolve.estimate.decode_published import (
    ADA_L40S,
    AMPERE_A100_SXM,
    BLACKWELL_B200,
    PUBLISHED_SOURCE,
)


@dataclass(frozen=True)
class DecodeSource:
    """One card's measured decode-shaped GEMM sets and where they come from."""

    family: str
    bf16_tflops: float  # the measured card's dense BF16 peak
    source: str  # who measured and how, for the estimate's notes
    document: str  # where the method and raw figures are
    tables: tuple[DecodeGemm, ...]


SOURCES: tuple[DecodeSource, ...] = (
    DecodeSource(
        "hopper", 989.0, MEASURED_SOURCE, "benchmarks/data/h200-decode-gemm.md", HOPPER_SXM
    ),
    DecodeSource(
        "ampere",
        312.0,
        f"A100 SXM 80GB, {PUBLISHED_SOURCE}",
        "benchmarks/data/published-decode-gemm.md",
        AMPERE_A100_SXM,
    ),
    DecodeSource(
        "ada",
        362.05,
        f"L40S, {PUBLISHED_SOURCE}",
        "benchmarks/data/published-decode-gemm.md",
        ADA_L40S,
    ),
    DecodeSource(
        "blackwell",
        2250.0,
        f"B200, {PUBLISHED_SOURCE.replace('0.14.0', '0.19.0')}",
        "benchmarks/data/published-decode-gemm.md",
        BLACKWELL_B200,
    ),
)


@dataclass(frozen=True)
class DecodeRate:
    """The set a layout decodes at, with its source."""

    table: DecodeGemm
    source: DecodeSource


def measured_for(
    family: str, fmt: str, bf16_tflops: float, layer_params: float
) -> DecodeRate | None:
    """The measured set nearest in per-GPU layer size, for this card and format."""
    if fmt not in ("bf16", "fp16", *EIGHT_BIT):
        return None
    key = "fp8" if fmt in EIGHT_BIT else "bf16"
    for source in SOURCES:
        if source.family != family or abs(bf16_tflops / source.bf16_tflops - 1.0) > 0.1:
            continue
        rows = [t for t in source.tables if t.fmt == key]
        if not rows:
            return None
        table = min(rows, key=lambda t: abs(math.log(t.layer_params / max(1.0, layer_params))))
        return DecodeRate(table, source)
    return None
