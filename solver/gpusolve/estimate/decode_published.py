"""Decode-shaped GEMM shares for Ampere, Ada and Blackwell, from NVIDIA AIConfigurator's tables.

AIConfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0, commit 095f58a5) publishes
per-system GEMM latencies measured through vLLM's `RowParallelLinear` (cuBLAS for BF16, vLLM's
FP8 linear with dynamic per-token activation scales for FP8), each a CUDA graph cycling six
copies of the weight: `aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/vllm/
<release>/gemm_perf.parquet`, A100-SXM4-80GB and L40S at vLLM 0.14.0, B200 at 0.19.0 (the oldest
release its table has). `benchmarks/decode_gemm_published.py` turns them into the same
per-layer shares as the H200 set gpusolve measured (Llama-3-8B and -70B layers' qkv, o, gate_up
and down split over TP, FLOPs over time as a share of the dense datasheet peak: A100 312 BF16;
L40S 362.05 BF16, 733 FP8; B200 2,250 BF16 TFLOP/s), keeping only the layouts whose six weight
copies exceed twice the L2 (40 MB; 96 MB; 126 MB for the B200, the larger of the 96-126 MB that
secondary sources give: its 70B TP1 and TP2 sets only), so every figure streams from memory as
a decode step does. The same procedure on the H200 table reads our own BF16 H200 measurement
within 0.86-1.13x at every M but 128 (1.32x on three sets). Its FP8 reads only 0.53-0.97x of
our bare FP8 GEMMs: vLLM's FP8 linear quantises the activations inside the timed call, another
kernel than the H200 FP8 set times, so the published FP8 figures are not used and FP8 off
Hopper keeps the training rate.
"""

from __future__ import annotations

from gpusolve.estimate.decode_gemm import DecodeGemm

PUBLISHED_SOURCE = "NVIDIA AIConfigurator GEMM tables (vLLM 0.14.0)"
# The M (rows in the step) every published set is read at.
ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def _sets(table: str) -> tuple[DecodeGemm, ...]:
    """Sets from lines of `format, parameters a layer per GPU, share at each of ROWS`."""
    sets = []
    for line in table.strip().splitlines():
        fmt, params, *shares = line.split()
        points = tuple(zip(ROWS, map(float, shares), strict=True))
        sets.append(DecodeGemm(fmt, float(params), points))
    return tuple(sets)


# A100 SXM4 80GB: Llama-3-8B TP1, TP2; Llama-3-70B TP1, TP2, TP4, TP8
AMPERE_A100_SXM = _sets(
    """
bf16 218.1e6 0.0045 0.0094 0.0187 0.037 0.0727 0.1425 0.2871 0.4878 0.6564 0.7614 0.8197 0.8581
bf16 109.1e6 0.0043 0.0089 0.0175 0.0347 0.0658 0.133 0.2515 0.443 0.5976 0.7096 0.7522 0.7911
bf16 855.6e6 0.005 0.0101 0.0199 0.0399 0.0779 0.1532 0.2908 0.56 0.7993 0.8371 0.916 0.9248
bf16 427.8e6 0.0047 0.0098 0.019 0.038 0.0741 0.1441 0.2892 0.5157 0.6786 0.7904 0.8564 0.9043
bf16 213.9e6 0.0046 0.0093 0.0179 0.0347 0.0692 0.1355 0.2676 0.4772 0.6412 0.725 0.8163 0.8665
bf16 107.0e6 0.004 0.008 0.0159 0.0336 0.0636 0.1173 0.2493 0.4086 0.5761 0.5731 0.715 0.7917
"""
)

# L40S: Llama-3-8B TP1; Llama-3-70B TP1, TP2, TP4
ADA_L40S = _sets(
    """
bf16 218.1e6 0.0018 0.0038 0.0074 0.0152 0.0284 0.0565 0.1128 0.2086 0.3848 0.683 0.732 0.7647
bf16 855.6e6 0.002 0.0038 0.0078 0.0156 0.031 0.0556 0.113 0.2209 0.4058 0.6448 0.7392 0.7557
bf16 427.8e6 0.002 0.0038 0.0073 0.0151 0.0292 0.0553 0.1117 0.2157 0.3962 0.6654 0.7524 0.7394
bf16 213.9e6 0.002 0.0037 0.007 0.0144 0.0292 0.0575 0.1109 0.2157 0.4002 0.6905 0.7471 0.7291
"""
)

# B200 (vLLM 0.19.0): Llama-3-70B TP1, TP2
BLACKWELL_B200 = _sets(
    """
bf16 855.6e6 0.0028 0.0055 0.0111 0.0222 0.044 0.0836 0.1651 0.3228 0.5707 0.7044 0.7633 0.7381
bf16 427.8e6 0.0026 0.0053 0.0105 0.0208 0.0411 0.0815 0.1603 0.3142 0.5299 0.7143 0.733 0.7224
"""
)
