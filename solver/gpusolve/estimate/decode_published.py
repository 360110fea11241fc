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

AMPERE_A100_SXM: tuple[DecodeGemm, ...] = (
    # llama3-8b TP1
    DecodeGemm(
        "bf16",
        218.1e6,
        (
            (1, 0.0045),
            (2, 0.0094),
            (4, 0.0187),
            (8, 0.037),
            (16, 0.0727),
            (32, 0.1425),
            (64, 0.2871),
            (128, 0.4878),
            (256, 0.6564),
            (512, 0.7614),
            (1024, 0.8197),
            (2048, 0.8581),
        ),
    ),
    # llama3-8b TP2
    DecodeGemm(
        "bf16",
        109.1e6,
        (
            (1, 0.0043),
            (2, 0.0089),
            (4, 0.0175),
            (8, 0.0347),
            (16, 0.0658),
            (32, 0.133),
            (64, 0.2515),
            (128, 0.443),
            (256, 0.5976),
            (512, 0.7096),
            (1024, 0.7522),
            (2048, 0.7911),
        ),
    ),
    # llama3-70b TP1
    DecodeGemm(
        "bf16",
        855.6e6,
        (
            (1, 0.005),
            (2, 0.0101),
            (4, 0.0199),
            (8, 0.0399),
            (16, 0.0779),
            (32, 0.1532),
            (64, 0.2908),
            (128, 0.56),
            (256, 0.7993),
            (512, 0.8371),
            (1024, 0.916),
            (2048, 0.9248),
        ),
    ),
    # llama3-70b TP2
    DecodeGemm(
        "bf16",
        427.8e6,
        (
            (1, 0.0047),
            (2, 0.0098),
            (4, 0.019),
            (8, 0.038),
            (16, 0.0741),
            (32, 0.1441),
            (64, 0.2892),
            (128, 0.5157),
            (256, 0.6786),
            (512, 0.7904),
            (1024, 0.8564),
            (2048, 0.9043),
        ),
    ),
    # llama3-70b TP4
    DecodeGemm(
        "bf16",
        213.9e6,
        (
            (1, 0.0046),
            (2, 0.0093),
            (4, 0.0179),
            (8, 0.0347),
            (16, 0.0692),
            (32, 0.1355),
            (64, 0.2676),
            (128, 0.4772),
            (256, 0.6412),
            (512, 0.725),
            (1024, 0.8163),
            (2048, 0.8665),
        ),
    ),
    # llama3-70b TP8
    DecodeGemm(
        "bf16",
        107.0e6,
        (
            (1, 0.004),
            (2, 0.008),
            (4, 0.0159),
            (8, 0.0336),
            (16, 0.0636),
            (32, 0.1173),
            (64, 0.2493),
            (128, 0.4086),
            (256, 0.5761),
            (512, 0.5731),
            (1024, 0.715),
            (2048, 0.7917),
        ),
    ),
)
ADA_L40S: tuple[DecodeGemm, ...] = (
    # llama3-8b TP1
    DecodeGemm(
        "bf16",
        218.1e6,
        (
            (1, 0.0018),
            (2, 0.0038),
            (4, 0.0074),
            (8, 0.0152),
            (16, 0.0284),
            (32, 0.0565),
            (64, 0.1128),
            (128, 0.2086),
            (256, 0.3848),
            (512, 0.683),
            (1024, 0.732),
            (2048, 0.7647),
        ),
    ),
    # llama3-70b TP1
    DecodeGemm(
        "bf16",
        855.6e6,
        (
            (1, 0.002),
            (2, 0.0038),
            (4, 0.0078),
            (8, 0.0156),
            (16, 0.031),
            (32, 0.0556),
            (64, 0.113),
            (128, 0.2209),
            (256, 0.4058),
            (512, 0.6448),
            (1024, 0.7392),
            (2048, 0.7557),
        ),
    ),
    # llama3-70b TP2
    DecodeGemm(
        "bf16",
        427.8e6,
        (
            (1, 0.002),
            (2, 0.0038),
            (4, 0.0073),
            (8, 0.0151),
            (16, 0.0292),
            (32, 0.0553),
            (64, 0.1117),
            (128, 0.2157),
            (256, 0.3962),
            (512, 0.6654),
            (1024, 0.7524),
            (2048, 0.7394),
        ),
    ),
    # llama3-70b TP4
    DecodeGemm(
        "bf16",
        213.9e6,
        (
            (1, 0.002),
            (2, 0.0037),
            (4, 0.007),
            (8, 0.0144),
            (16, 0.0292),
            (32, 0.0575),
            (64, 0.1109),
            (128, 0.2157),
            (256, 0.4002),
            (512, 0.6905),
            (1024, 0.7471),
            (2048, 0.7291),
        ),
    ),
)

BLACKWELL_B200: tuple[DecodeGemm, ...] = (
    # llama3-70b TP1
    DecodeGemm(
        "bf16",
        855.6e6,
        (
            (1, 0.0028),
            (2, 0.0055),
            (4, 0.0111),
            (8, 0.0222),
            (16, 0.044),
            (32, 0.0836),
            (64, 0.1651),
            (128, 0.3228),
            (256, 0.5707),
            (512, 0.7044),
            (1024, 0.7633),
            (2048, 0.7381),
        ),
    ),
    # llama3-70b TP2
    DecodeGemm(
        "bf16",
        427.8e6,
        (
            (1, 0.0026),
            (2, 0.0053),
            (4, 0.0105),
            (8, 0.0208),
            (16, 0.0411),
            (32, 0.0815),
            (64, 0.1603),
            (128, 0.3142),
            (256, 0.5299),
            (512, 0.7143),
            (1024, 0.733),
            (2048, 0.7224),
        ),
    ),
)
