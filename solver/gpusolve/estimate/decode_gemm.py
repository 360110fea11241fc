"""Decode-shaped GEMM rates: what a card reaches on a GEMM with few rows (M = the tokens of
one serving step), per card family and format, from measurements of those shapes.

A serving step multiplies M tokens (M = 1 … a few thousand) by TP-split weight matrices. At
small M the kernel streams the weights and its rate is set by bandwidth; as M grows it turns
compute-bound, but below the shapes a training step runs (M = tens of thousands) the tile
scheduler and wave quantisation keep it under the large-GEMM rate (MAMF). So a serving GEMM
is timed as one kernel whose weight loads and MMAs overlap inside it (CUTLASS/cuBLAS
multistage pipelines: the loads of the next tile run under the MMAs of this one):

    t = max(weight bytes / streaming bandwidth, FLOPs / (peak × compute_fraction(M)))

`compute_fraction(M)` comes from measured decode-shaped GEMMs (`HOPPER_SXM` here, measured by
gpusolve; Ampere and Ada in `decode_published.py`; which card a family's set fits in
`decode_rates.py`), the set nearest in per-GPU layer size (a TP-split 8B layer runs its small
kernels at a lower share than a 70B one); a card without a measurement uses its large-GEMM
rate (MAMF × FIT_GEMM_SHAPES, the training figure) and says so in the estimate's notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class DecodeGemm:
    """One measured set of a layer's GEMMs on one GPU: achieved share of the dense datasheet
    peak at each M (total FLOPs of qkv, o, gate_up and down over their total time)."""

    fmt: str  # "bf16" | "fp8"
    layer_params: float  # weights of the layer's GEMMs on one GPU (after the TP split)
    points: tuple[tuple[int, float], ...]  # (M, achieved fraction of dense peak), M rising


# Measured 2026-12-04 by the gpusolve integrator on one H200 SXM 141 GB (driver 580, torch
# 2.11.0+cu130; BF16 through cuBLAS torch.matmul, FP8 e4m3 through torch._scaled_mm with
# per-tensor scales): each figure a CUDA graph replaying the layer's GEMMs over rotating weight
# copies larger than 4x the L2 (operands stream from HBM as in a decode step), median of 7
# replays; Llama-3-8B and -70B layer shapes split TP1-8, M = 1 … 2048. Fractions of the dense
# datasheet peak (989 BF16, 1,979 FP8 TFLOP/s). Raw results and method:
# benchmarks/data/h200-decode-gemm.md. At small M the kernels stream weights (4.0-4.5 TB/s on
# the large 70B GEMMs, less on small TP-split ones: a fixed cost per kernel), so these shares
# carry the memory-bound regime too, for this card's bandwidth.
MEASURED_SOURCE = "H200 SXM decode-shaped GEMMs, gpusolve integrator 2026-12-04"
HOPPER_SXM: tuple[DecodeGemm, ...] = (
    # llama3-8b TP1
    DecodeGemm(
        "bf16",
        218.1e6,
        (
            (1, 0.0036),
            (2, 0.0073),
            (4, 0.014),
            (8, 0.0289),
            (16, 0.0572),
            (32, 0.111),
            (64, 0.2213),
            (128, 0.3201),
            (256, 0.6131),
            (512, 0.7242),
            (1024, 0.7843),
            (2048, 0.7846),
        ),
    ),
    # llama3-8b TP2
    DecodeGemm(
        "bf16",
        109.1e6,
        (
            (1, 0.003),
            (2, 0.0062),
            (4, 0.012),
            (8, 0.0245),
            (16, 0.0488),
            (32, 0.0966),
            (64, 0.1945),
            (128, 0.3764),
            (256, 0.5667),
            (512, 0.6927),
            (1024, 0.7427),
            (2048, 0.7847),
        ),
    ),
    # llama3-8b TP4
    DecodeGemm(
        "bf16",
        54.5e6,
        (
            (1, 0.0023),
            (2, 0.0047),
            (4, 0.0094),
            (8, 0.0186),
            (16, 0.0386),
            (32, 0.0762),
            (64, 0.1578),
            (128, 0.2931),
            (256, 0.479),
            (512, 0.6177),
            (1024, 0.6917),
            (2048, 0.739),
        ),
    ),
    # llama3-8b TP8
    DecodeGemm(
        "bf16",
        27.3e6,
        (
            (1, 0.0018),
            (2, 0.0035),
            (4, 0.007),
            (8, 0.014),
            (16, 0.0275),
            (32, 0.0542),
            (64, 0.114),
            (128, 0.2127),
            (256, 0.3654),
            (512, 0.531),
            (1024, 0.6305),
            (2048, 0.6969),
        ),
    ),
    # llama3-70b TP1
    DecodeGemm(
        "bf16",
        855.6e6,
        (
            (1, 0.0042),
            (2, 0.0086),
            (4, 0.0172),
            (8, 0.0326),
            (16, 0.0646),
            (32, 0.1336),
            (64, 0.2312),
            (128, 0.3582),
            (256, 0.7003),
            (512, 0.7762),
            (1024, 0.748),
            (2048, 0.7298),
        ),
    ),
    # llama3-70b TP2
    DecodeGemm(
        "bf16",
        427.8e6,
        (
            (1, 0.004),
            (2, 0.0076),
            (4, 0.016),
            (8, 0.0318),
            (16, 0.0636),
            (32, 0.1239),
            (64, 0.2404),
            (128, 0.3536),
            (256, 0.6749),
            (512, 0.7434),
            (1024, 0.7725),
            (2048, 0.7417),
        ),
    ),
    # llama3-70b TP4
    DecodeGemm(
        "bf16",
        213.9e6,
        (
            (1, 0.0036),
            (2, 0.0073),
            (4, 0.0146),
            (8, 0.0296),
            (16, 0.0586),
            (32, 0.1159),
            (64, 0.2282),
            (128, 0.4407),
            (256, 0.6343),
            (512, 0.7069),
            (1024, 0.7508),
            (2048, 0.7891),
        ),
    ),
    # llama3-70b TP8
    DecodeGemm(
        "bf16",
        107.0e6,
        (
            (1, 0.0031),
            (2, 0.0062),
            (4, 0.0123),
            (8, 0.0247),
            (16, 0.0488),
            (32, 0.1004),
            (64, 0.196),
            (128, 0.3864),
            (256, 0.5752),
            (512, 0.6764),
            (1024, 0.7104),
            (2048, 0.7528),
        ),
    ),
    # llama3-8b TP1
    DecodeGemm(
        "fp8",
        218.1e6,
        (
            (1, 0.0031),
            (2, 0.0061),
            (4, 0.012),
            (8, 0.0245),
            (16, 0.049),
            (32, 0.0993),
            (64, 0.1892),
            (128, 0.3558),
            (256, 0.5286),
            (512, 0.6459),
            (1024, 0.673),
            (2048, 0.6829),
        ),
    ),
    # llama3-8b TP2
    DecodeGemm(
        "fp8",
        109.1e6,
        (
            (1, 0.0025),
            (2, 0.0051),
            (4, 0.0101),
            (8, 0.0204),
            (16, 0.0404),
            (32, 0.0841),
            (64, 0.16),
            (128, 0.2868),
            (256, 0.4703),
            (512, 0.601),
            (1024, 0.6603),
            (2048, 0.6648),
        ),
    ),
    # llama3-8b TP4
    DecodeGemm(
        "fp8",
        54.5e6,
        (
            (1, 0.0018),
            (2, 0.0036),
            (4, 0.0074),
            (8, 0.0157),
            (16, 0.031),
            (32, 0.0611),
            (64, 0.1171),
            (128, 0.2211),
            (256, 0.3699),
            (512, 0.5146),
            (1024, 0.6015),
            (2048, 0.6268),
        ),
    ),
    # llama3-8b TP8
    DecodeGemm(
        "fp8",
        27.3e6,
        (
            (1, 0.0012),
            (2, 0.0023),
            (4, 0.0048),
            (8, 0.0096),
            (16, 0.0201),
            (32, 0.0398),
            (64, 0.0768),
            (128, 0.1413),
            (256, 0.2496),
            (512, 0.3998),
            (1024, 0.5121),
            (2048, 0.5551),
        ),
    ),
    # llama3-70b TP1
    DecodeGemm(
        "fp8",
        855.6e6,
        (
            (1, 0.0035),
            (2, 0.007),
            (4, 0.014),
            (8, 0.0281),
            (16, 0.0567),
            (32, 0.1135),
            (64, 0.2169),
            (128, 0.4269),
            (256, 0.6078),
            (512, 0.6689),
            (1024, 0.677),
            (2048, 0.6796),
        ),
    ),
    # llama3-70b TP2
    DecodeGemm(
        "fp8",
        427.8e6,
        (
            (1, 0.0034),
            (2, 0.0068),
            (4, 0.0136),
            (8, 0.0274),
            (16, 0.0543),
            (32, 0.1046),
            (64, 0.2034),
            (128, 0.4036),
            (256, 0.5868),
            (512, 0.6575),
            (1024, 0.662),
            (2048, 0.6766),
        ),
    ),
    # llama3-70b TP4
    DecodeGemm(
        "fp8",
        213.9e6,
        (
            (1, 0.0029),
            (2, 0.006),
            (4, 0.0119),
            (8, 0.0238),
            (16, 0.0475),
            (32, 0.0939),
            (64, 0.1794),
            (128, 0.3461),
            (256, 0.5485),
            (512, 0.6269),
            (1024, 0.6791),
            (2048, 0.6867),
        ),
    ),
    # llama3-70b TP8
    DecodeGemm(
        "fp8",
        107.0e6,
        (
            (1, 0.0023),
            (2, 0.0048),
            (4, 0.0095),
            (8, 0.019),
            (16, 0.0373),
            (32, 0.0783),
            (64, 0.1475),
            (128, 0.2867),
            (256, 0.4672),
            (512, 0.5794),
            (1024, 0.6347),
            (2048, 0.6713),
        ),
    ),
)


def compute_fraction(table: DecodeGemm, m: float) -> float:
    """The share at `m` rows, log-linear between measured M, flat beyond the ends."""
    pts = table.points
    if m <= pts[0][0]:
        return pts[0][1] * max(m, 1e-9) / pts[0][0]
    for i in range(1, len(pts)):
        (m0, f0), (m1, f1) = pts[i - 1], pts[i]
        if m <= m1:
            w = (math.log(m) - math.log(m0)) / (math.log(m1) - math.log(m0))
            return f0 + w * (f1 - f0)
    return pts[-1][1]
