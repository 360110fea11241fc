"""Held-out cases for expert-parallel decode across nodes: the MoE dispatch and combine that
attention data-parallel serving runs each layer (estimate/moeserve.py `exchange_s`).

DeepEP's README, "Low-latency kernels with pure RDMA" (deepseek-ai/DeepEP @ the 2025-06 README,
section Performance): H800 GPUs, each with a CX7 InfiniBand 400 Gb/s NIC (~50 GB/s); "a typical
DeepSeek-V3/R1 production setting (128 tokens per batch, 7168 hidden, top-8 experts, FP8
dispatching and BF16 combining)"; latency of one dispatch and one combine per EP size. These
kernels are what DeepSeek-V3 decodes with (arXiv:2412.19437 §3.4.2: point-to-point transfers
over IB). The cases were added before the all-to-all's latency was changed from a ring's
ranks − 1 steps to one message's start-up; nothing here is fitted.

EP8 is a cross-check: in that table the eight GPUs of one server also reach each other over
RDMA ("pure RDMA"), where the model sends on-node copies over NVLink (the kernels do so since
DeepEP PR #173, after the table was measured).
"""

from __future__ import annotations

from tests.support.validation_cases import Case, _hgx

from gpusolve.estimate.moeserve import exchange_s
from gpusolve.estimate.shapes import resolve_arch
from gpusolve.models.requirements import ModelShape

DEEPEP_CITATION = "deepseek-ai/DeepEP README, Performance: low-latency kernels with pure RDMA"
# EP size -> (dispatch µs, combine µs).
DEEPEP_LOW_LATENCY_US: dict[int, tuple[float, float]] = {
    8: (77, 114),
    16: (118, 195),
    32: (155, 273),
    64: (173, 314),
    128: (192, 369),
    256: (194, 360),
}
TOKENS_PER_RANK = 128


def _case(ep: int, which: str, published_us: float) -> Case:
    # DeepSeek-V3's shape: hidden 7168, top-8 of 256 routed experts.
    arch = resolve_arch(ModelShape(preset="deepseek-v3"))
    hw = _hgx("h800-sxm", 400, 400)  # HGX H800: NVLink 400 GB/s, 8 x 400 Gb/s InfiniBand
    index = 0 if which == "dispatch" else 1

    def run() -> float:
        return exchange_s(arch, hw, ep, TOKENS_PER_RANK, "fp8")[index] * 1e6

    gated = ep > 8
    return Case(
        group="DeepEP dispatch/combine, H800 + CX7 400 Gb/s (held out)"
        + ("" if gated else " (cross-check)"),
        name=f"EP{ep} {which}, {TOKENS_PER_RANK} tokens a rank",
        citation=DEEPEP_CITATION,
        published=published_us,
        unit="µs",
        tolerance=0.20,
        fitted_on=False,
        run=run,
        gated=gated,
        assumption="FP8 dispatch (the per-128 scales, 3% of the bytes, not counted), BF16 "
        "combine; experts spread evenly; on-node copies over NVLink"
        + ("" if gated else "; the table's EP8 sent them over RDMA"),
    )


def dispatch_cases() -> list[Case]:
    return [
        _case(ep, which, us)
        for ep, pair in DEEPEP_LOW_LATENCY_US.items()
        for which, us in zip(("dispatch", "combine"), pair, strict=True)
    ]
