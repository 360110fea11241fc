"""What a card family achieves of its datasheet, as sourced parameters (no per-case fudge).

The step-time model (`steptime.py`) never assumes an end-to-end MFU. It times each kernel at
what the hardware and its libraries reach on that kind of kernel:

  gemm ........ large dense GEMMs: the maximum achievable matmul FLOPS (MAMF) over the dense
                datasheet peak, measured per accelerator with the same benchmark
                (Bekman, "Machine Learning Engineering", compute/accelerator/README.md,
                "Maximum Achievable Matmul FLOPS comparison table", mamf-finder.py, BF16).
  attention ... fused attention kernels (FlashAttention-2, CK, the vendor's own), forward and
                backward, as a fraction of the same peak (Dao 2023, FlashAttention-2, §4.1;
                Shah et al. 2024, FlashAttention-3, abstract: FA-2 on H100).
  memory ...... streaming kernels (norms, activations, residuals, the optimizer step) as a
                fraction of the datasheet HBM/GDDR bandwidth (STREAM/BabelStream-class
                measurements).
  links ....... the collective library's bus bandwidth over the link rate (nccl-tests
                `busbw`, PERFORMANCE.md) and its latency per collective, per link kind.

`GEMM_SHAPES` is the one parameter fitted, per family, on that family's published training
rows alone (tests/support/validation_cases.py): the fraction of MAMF that the GEMM shapes of a
real transformer step reach. A family without rows of its own takes Ampere's, so what
transfers to it is the sourced MAMF ratio, not a fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.compute import EIGHT_BIT
from gpusolve.models.catalog import Card


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions for one card family (all in (0, 1])."""

    family: str
    gemm: float  # MAMF / dense peak, BF16
    gemm_fp8: float  # MAMF / dense peak, FP8 (where the card has FP8 tensor cores)
    attention_fwd: float  # fused attention forward, fraction of the BF16 peak
    attention_bwd: float  # fused attention backward
    memory: float  # streaming kernels, fraction of datasheet bandwidth
    library: str  # the collective library the family's software stack uses
    source: str


# --------------------------------------------------------------------------- the table
# MAMF figures: Bekman, ml-engineering @744d01e, compute/accelerator/README.md, "Maximum
# Achievable Matmul FLOPS comparison table" (mean of 100 iterations after 50 warm-up, best shape
# of a brute-force sweep by mamf-finder.py). A card may carry its own measured MAMF in the
# catalogue (`mamf_tflops`); these family ratios apply to cards that do not.
# Streaming bandwidth: Azure/AI-benchmarking-guide @8fd0c6e, Azure_Results/ND_*_results.md
# ("HBM Bandwidth", BabelStream-style triad over the datasheet figure).
FAMILIES: dict[str, Efficiency] = {
    "ampere": Efficiency(
        family="ampere",
        gemm=271.2 / 312,  # A100 SXM MAMF 271.2 of 312 TFLOPS (86.9%)
        gemm_fp8=271.2 / 312,  # no FP8 tensor cores: FP8 requests run as BF16
        attention_fwd=0.70,  # FlashAttention-2 forward on A100: "up to 73%" of peak (§4.1)
        attention_bwd=0.60,  # FlashAttention-2 backward on A100, head dim 128 (§4.1, Fig. 6)
        memory=1.70 / 2.039,  # A100-SXM4-80GB triad 1.70 TB/s (ND_A100_v4_results.md)
        library="NCCL",
        source="MAMF A100 SXM 271.2/312; FlashAttention-2 §4.1; Azure ND A100 v4 triad",
    ),
    "hopper": Efficiency(
        family="hopper",
        gemm=794.5 / 989,  # H100 SXM MAMF 794.5 of 989 (80.3%; "H200 is the same")
        gemm_fp8=1402.6 / 1979,  # H100 SXM FP8 MAMF 1,402.6 of 1,979 (70.9%)
        # FlashAttention-2, the kernel the published Hopper runs used, reaches "only 35%
        # utilization on the H100" (Shah et al. 2024, FlashAttention-3, abstract; FA-3's
        # 75% needs its Hopper-only kernels); backward keeps A100's bwd/fwd ratio (0.6/0.7).
        attention_fwd=0.35,
        attention_bwd=0.30,
        memory=2.97 / 3.35,  # H100 80GB HBM3 triad 2.97 TB/s (ND_H100_v5_results.md)
        library="NCCL",
        source="MAMF H100 SXM 794.5/989, FP8 1402.6/1979; FlashAttention-3 abstract; Azure triad",
    ),
    "blackwell": Efficiency(
        family="blackwell",
        gemm=1745.0 / 2250,  # B200 SXM MAMF 1,745 of 2,250 (77.6%)
        gemm_fp8=3432.5 / 4500,  # B200 SXM FP8 MAMF 3,432.5 of 4,500 (76.3%)
        attention_fwd=0.35,  # no published B200 attention fraction: Hopper's FlashAttention-2
        attention_bwd=0.30,
        memory=4.15 / 4.8,  # no B200 triad published: H200's 4.15 of 4.8 (HBM3e)
        library="NCCL",
        source="MAMF B200 1745/2250, FP8 3432.5/4500; attention and memory as H200 (estimate)",
    ),
    # GeForce Blackwell (GB202: RTX 5090 D, D V2): no MAMF or triad published for a GB202
    # board. Labelled estimate: Ada's row, the same consumer tensor-core path (FP32-accumulate
    # rates in the catalogue) on GDDR-class memory; B200's row would credit HBM3e and
    # datacentre clocks the board does not have.
    "blackwell_geforce": Efficiency(
        family="blackwell_geforce",
        gemm=252.9 / 312,
        gemm_fp8=1402.6 / 1979,
        attention_fwd=0.55,
        attention_bwd=0.45,
        memory=0.80,  # estimate: GDDR7 streams below HBM, as GDDR6X on Ada
        library="NCCL",
        source="estimate: no GB202 MAMF or triad published; Ada's row (consumer board, GDDR)",
    ),
    "ada": Efficiency(
        family="ada",
        gemm=252.9 / 312,  # no Ada MAMF published: the PCIe A100's 81.1% (a power-limited
        gemm_fp8=1402.6 / 1979,  # board); FP8 as H100 (same 4th-gen tensor-core FP8 path)
        attention_fwd=0.55,  # estimate: FlashAttention-2 on consumer Ada, below A100's 0.70
        attention_bwd=0.45,
        memory=0.80,  # estimate: GDDR6/6X boards stream below HBM's ~0.85
        library="NCCL",
        source="estimate: no Ada MAMF or triad published; A100 PCIe MAMF 252.9/312 as proxy",
    ),
    "cdna3": Efficiency(
        family="cdna3",
        gemm=668.4 / 1300,  # MI300X MAMF 668.4 of 1,300 (51.4%, hipBLASLt, TunableOp on)
        gemm_fp8=1159.2 / 2614.9,  # MI300X FP8 cuBLASLt-equivalent 1,159 TFLOPS (Azure fork)
        attention_fwd=0.35,  # estimate: CK FlashAttention on MI300X ~ its GEMM fraction x 0.7
        attention_bwd=0.28,
        memory=4.09 / 5.3,  # MI300X triad 4.09 TB/s (ND_MI300X_v5_results.md, fork)
        library="RCCL",
        source="MAMF MI300X 668.4/1300 (ROCm 6.3); Azure ND MI300X v5 FP8 GEMM and triad",
    ),
    "ascend": Efficiency(
        family="ascend",
        gemm=0.60,  # estimate: no public 910B GEMM sweep; between MI300X (0.51) and Ada
        gemm_fp8=0.60,  # no FP8: runs as BF16
        attention_fwd=0.35,  # estimate, as MI300X
        attention_bwd=0.28,
        memory=0.75,  # estimate, below MI300X's 0.77
        library="HCCL",
        source=(
            "estimate (H39 software maturity): no public Ascend 910B GEMM or stream figures; "
            "Pangu Ultra MoE reports "
            "30.0% MFU on 6K Ascend NPUs (arXiv 2505.04519) as the end-to-end check"
        ),
    ),
    # Cambricon MLU (MLU370 class): no public GEMM sweep, stream figure or CNCL busbw. H39:
    # non-NVIDIA stacks support BF16 "less maturely"; Cambricon's own claim is the 8-card
    # MLU370-X8 at 155% of a "350 W RTX GPU" server on YOLOv3/Transformer/BERT/ResNet101
    # (Cambricon launch note, 2022-03). Labelled estimate: Ascend's row, the family with the
    # closest software maturity, less for GDDR-class LPDDR5 streaming.
    "mlu": Efficiency(
        family="mlu",
        gemm=0.60,
        gemm_fp8=0.60,  # no FP8: runs as BF16
        attention_fwd=0.35,
        attention_bwd=0.28,
        memory=0.70,  # estimate: LPDDR5 streams below HBM
        library="CNCL",
        source="estimate (H39 software maturity): Ascend's row; no public MLU GEMM or stream data",
    ),
    # Hygon DCU (K100-AI): no public GEMM sweep of the K100-AI. What is published (rocBLAS,
    # github.com/wangzy0327/hblas-bench DCU-bench.md): the K100 before it reached 32.9% of
    # its FP16 peak, the BW200 after it 62.8%, and 95.1% only after a clock fix. H39: a young
    # stack (DTK, a ROCm port). Labelled estimate: MI300X's row (the same hipBLASLt/RCCL
    # lineage); memory 0.70, above what a single-card vLLM decode of Qwen2.5-7B shows (40
    # tok/s x 15.2 GB = 0.61 TB/s of 896, 0.68, prefill included; blog draft "9 Accelerators,
    # One Model: A Same-Load vLLM Benchmark Across Domestic and NVIDIA GPUs", 2026-07-10).
    "dcu": Efficiency(
        family="dcu",
        gemm=668.4 / 1300,
        gemm_fp8=668.4 / 1300,  # no FP8: runs as BF16
        attention_fwd=0.35,
        attention_bwd=0.28,
        memory=0.70,
        library="RCCL",
        source=(
            "estimate (H39 software maturity): MI300X's GEMM row (DTK is a ROCm port); "
            "K100 rocBLAS 32.9%, BW200 62.8-95.1% of peak (hblas-bench); decode >= 0.68 of 896 GB/s"
        ),
    ),
    # Kunlunxin XPU (P800): no public GEMM sweep, stream figure or BKCL busbw. H39: a vendor
    # stack (XRE, BKCL, vLLM-Kunlun). Labelled estimate: Ascend's row, the domestic stack with
    # the closest maturity; the same single-card benchmark puts the P800's decode at 86 tok/s
    # on Qwen2.5-7B, which the catalogue's estimated bandwidth reproduces at this fraction.
    "xpu": Efficiency(
        family="xpu",
        gemm=0.60,
        gemm_fp8=0.60,  # no FP8 published: runs as BF16
        attention_fwd=0.35,
        attention_bwd=0.28,
        memory=0.75,
        library="BKCL",
        source="estimate (H39 software maturity): Ascend's row; no public P800 GEMM or stream data",
    ),
}

# A card whose family the catalogue does not name: the most conservative datacentre row.
UNKNOWN_FAMILY = "ascend"

# The share of MAMF the GEMMs of a transformer step reach (MAMF is the best shape a sweep
# finds; a step's GEMMs are the shapes the model has), fitted per family on that family's
# published training rows alone (tests/support/validation_cases.py, `fitted_on`), never on a
# row used to check it. `benchmarks/validation.py --fit` sweeps each family's value.
GEMM_SHAPES: dict[str, float] = {
    # Narayanan et al. 2021 Table 1 (10 rows) and Korthikanti et al. 2022 Table 5 (8 rows),
    # A100 80GB.
    "ampere": 0.80,
    # NeMo 24.07 performance summary, DGX-H100 FP8 pretraining (5 rows: Llama 2 7B/13B/70B,
    # Llama 3 8B/70B). Checked on Llama 3 405B's Table 4 (2 rows) and the same summary's four
    # GPT-3 rows, never fitted there. 0.70 until the output layer ran at its 16-bit rate and
    # the loss moved its logits as Megatron-core does (steptime.LOSS_*_BYTES); refitted then.
    "hopper": 0.72,
}
FIT_GEMM_SHAPES = GEMM_SHAPES["ampere"]
"""The factor of families with no published training rows of their own (Ampere's)."""


def gemm_shape_factor(family: str) -> float:
    """The family's fitted share of MAMF, Ampere's where the family has no rows."""
    return GEMM_SHAPES.get(family, FIT_GEMM_SHAPES)


def family_of(card: Card) -> str:
    """The card's family: the catalogue's `architecture` when given, else from the vendor
    and the id (a100/a800/a10 → ampere, h100/h800/h20/h200 → hopper, ...)."""
    if card.architecture is not None:
        return card.architecture
    cid = card.id.lower()
    if card.vendor == "amd":
        return "cdna3"
    if card.vendor == "huawei":
        return "ascend"
    if card.vendor == "cambricon":
        return "mlu"
    if card.vendor == "hygon":
        return "dcu"
    if card.vendor == "kunlunxin":
        return "xpu"
    for prefix, family in (
        ("b2", "blackwell"),
        ("gb", "blackwell"),
        ("h", "hopper"),
        ("a", "ampere"),
        ("l", "ada"),
        ("rtx-50", "blackwell_geforce"),
        ("rtx", "ada"),
    ):
        if cid.startswith(prefix):
            return family
    return UNKNOWN_FAMILY


def efficiency_of(card: Card) -> Efficiency:
    return FAMILIES.get(family_of(card), FAMILIES[UNKNOWN_FAMILY])


def mamf_fraction(card: Card, eff: Efficiency, fmt: str) -> float:
    """The card's measured MAMF over its peak in the GEMMs' format, else the family's ratio
    (TF32 and FP16 GEMMs use the BF16 ratio)."""
    fp8 = fmt in EIGHT_BIT and card.tflops.fp8 is not None
    mamf = card.mamf_tflops
    if mamf is not None:
        measured = mamf.fp8 if fp8 else mamf.bf16
        peak = card.tflops_at("fp8" if fp8 else "bf16")
        if measured is not None and peak:
            return min(1.0, measured / peak)
    return eff.gemm_fp8 if fp8 else eff.gemm


# --------------------------------------------------------------------------- links


@dataclass(frozen=True)
class LinkEfficiency:
    """A collective library on one kind of link: bus bandwidth / link rate, latency."""

    bus: float
    latency_s: float
    source: str


def link_efficiency(topology: str, library: str) -> LinkEfficiency:
    """The collective library's efficiency on a kind of link: its own row where measured
    (`LIBRARY:topology`), else the link's."""
    return LINKS.get(f"{library}:{topology}") or LINKS.get(topology) or LINKS["pcie"]


LINKS: dict[str, LinkEfficiency] = {
    # nccl-tests all_reduce busbw (PERFORMANCE.md defines it): 8 x A100 NVSwitch 234.89 GB/s
    # of 300 per direction (0.78), 8 x H100/H200 ring 367-370 of 450 (0.82; NVLS reaches
    # ~480): ml-engineering network/README.md "Real network throughput"; nccl issue 1442.
    "nvswitch": LinkEfficiency(
        0.80, 10e-6, "nccl-tests busbw: 8 x A100 234.9/300, 8 x H100 ~370/450"
    ),
    # Point-to-point meshes: a ring uses one link per neighbour. RCCL on 8 x MI300X
    # (Infinity Fabric, 7 x 64 GB/s per GPU): all_reduce busbw 313-317 GB/s of 448 (0.70;
    # ml-engineering network/README.md; Azure ND MI300X v5 results, fork).
    "full_mesh": LinkEfficiency(0.70, 15e-6, "RCCL all_reduce busbw on 8 x MI300X"),
    # HCCL on Ascend's HCCS mesh: no public busbw found; RCCL's mesh fraction, an estimate.
    "HCCL:full_mesh": LinkEfficiency(0.70, 15e-6, "estimate: RCCL's mesh fraction (no HCCL data)"),
    # H100 PCIe pair over NVLink bridges: 115-116 GB/s (nccl issue 1161) of ~128 (0.90).
    "nvlink_bridge_pairs": LinkEfficiency(0.90, 10e-6, "nccl issue 1161: bridged H100 PCIe pair"),
    # PCIe peers: NCCL models Gen4 x16 as 24 GB/s (src/graph/topo.cc), and 8 x RTX 5090 on
    # Gen5 measure 28 GB/s busbw (nccl issue 1639): the servers' peer figure (half the x16
    # rate, servers.yaml) already takes that in, so the library adds little on top.
    "pcie_switch": LinkEfficiency(0.80, 20e-6, "estimate over the servers' effective PCIe figure"),
    "pcie": LinkEfficiency(0.70, 25e-6, "estimate: across CPU sockets (host shared memory)"),
    # RDMA fabrics per NIC: "24GB/s is the peak performance per 200G NIC" (nccl-tests issue
    # 119), "46-48GB/s per NIC" at NDR 400 (nccl-tests issue 290): 0.92-0.96 of line rate.
    "infiniband": LinkEfficiency(0.94, 20e-6, "NVIDIA staff on nccl-tests issues 119 and 290"),
    "roce": LinkEfficiency(0.85, 25e-6, "estimate: below InfiniBand (ECN/PFC-tuned RoCEv2)"),
    "ethernet": LinkEfficiency(0.60, 50e-6, "estimate: NCCL over TCP sockets"),
}
