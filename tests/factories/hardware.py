"""Datasheet cards and the boards the physics sizes them on, built directly (figures from
/work/shared/reference/catalog-facts.md §1), so the physics tests do not move when the
shipped catalogue does."""

from __future__ import annotations

from typing import Any

from tests.factories import catalog

from gpusolve.estimate import Hardware
from gpusolve.models.catalog import Card

# What a datasheet card says beyond its figures: every card below states its own memory,
# bandwidth, TFLOPS, TDP and peer bandwidth.
DATASHEET: dict[str, Any] = {
    "vendor": "nvidia",
    "memory_type": "HBM",
    "pcie_gen": 4,
    "confidence": "V",
    "source": "catalog-facts §1",
}


def card(card_id: str, **over: Any) -> Card:
    """A card from its datasheet figures (`over`), on the generic card's remaining fields."""
    return catalog.card(card_id, **{**DATASHEET, **over})


# NVIDIA A100 datasheet r4: 80 GB HBM2e, 2,039 GB/s, 312 dense BF16, NVLink 600 GB/s.
A100_80 = card(
    "a100-80gb-sxm",
    memory_gb=80,
    memory_bandwidth_gbs=2039,
    tflops={"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312, "int8": 624},
    tdp_w=400,
    peer_bandwidth_gbs=600,
)
# NVIDIA H100 SXM5: 80 GB HBM3, 3,350 GB/s, 989 dense BF16, 1,979 FP8, NVLink 900 GB/s.
H100 = card(
    "h100-sxm",
    memory_gb=80,
    memory_bandwidth_gbs=3350,
    tflops={"fp32": 67, "tf32": 494.5, "bf16": 989, "fp16": 989, "fp8": 1979},
    tdp_w=700,
    peer_bandwidth_gbs=900,
    pcie_gen=5,
)
# H20 (leaked figures, U): 96 GB, 4,000 GB/s, 148 BF16, NVLink 900 GB/s.
H20 = card(
    "h20-96gb",
    memory_gb=96,
    memory_bandwidth_gbs=4000,
    tflops={"fp32": 44, "tf32": 74, "bf16": 148, "fp16": 148, "fp8": 296},
    tdp_w=400,
    peer_bandwidth_gbs=900,
    pcie_gen=5,
)
# L40S: 48 GB GDDR6, 864 GB/s, 362 BF16, no peer link (PCIe Gen4).
L40S = card(
    "l40s",
    memory_gb=48,
    memory_bandwidth_gbs=864,
    tflops={"fp32": 91.6, "tf32": 183, "bf16": 362, "fp16": 362, "fp8": 733},
    tdp_w=350,
    peer_link="pcie",
    peer_bandwidth_gbs=0,
    form_factor="pcie",
)
# RTX 4090: 24 GB GDDR6X, 1,008 GB/s, 165 BF16 (FP32 accumulate), no NVLink.
RTX4090 = card(
    "rtx-4090",
    memory_gb=24,
    memory_bandwidth_gbs=1008,
    tflops={"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
    tdp_w=450,
    peer_link="none",
    peer_bandwidth_gbs=0,
    form_factor="consumer",
)


def hgx(c: Card, *, fabric_gbps_per_gpu: float = 400, storage_gbs: float = 20) -> Hardware:
    """An 8-GPU board on the card's own peer link, one NIC per GPU."""
    return Hardware(
        card=c,
        gpus_per_node=8,
        intra_node_bandwidth_gbs=c.peer_bandwidth_gbs,
        inter_node_gbps_per_gpu=fabric_gbps_per_gpu,
        storage_write_gbs=storage_gbs,
        label=f"{c.id}-x8",
    )


def pcie_box(c: Card, *, fabric_gbps_per_gpu: float = 25, storage_gbs: float = 5) -> Hardware:
    """An 8-GPU PCIe box: 32 GB/s effective peer bandwidth (servers.yaml convention)."""
    return Hardware(
        card=c,
        gpus_per_node=8,
        intra_node_bandwidth_gbs=32,
        inter_node_gbps_per_gpu=fabric_gbps_per_gpu,
        storage_write_gbs=storage_gbs,
        label=f"{c.id}-pcie8",
    )
