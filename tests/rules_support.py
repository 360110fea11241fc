"""Small factories for the rules tests: valid models with overridable fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Server
from gpusolve.models.requirements import Requirements, Workload

PRICE = {"illustrative": True, "as_of": "2026-11", "source": "test"}


def workload(
    name: str = "w", kind: str = "full_finetune", params_b: float = 7.0, **kw: Any
) -> Workload:
    data: dict[str, Any] = {"name": name, "kind": kind, "model": {"params_b": params_b}}
    if kind == "inference":
        data["target_tokens_per_s"] = 1000
    else:
        data["tokens"] = 1e9
    model = kw.pop("model", None)
    if model:
        data["model"].update(model)
    data.update(kw)
    return Workload.model_validate(data)


def requirements(*workloads: Workload, **kw: Any) -> Requirements:
    data: dict[str, Any] = {"workloads": [w.model_dump(exclude_none=True) for w in workloads]}
    data.update(kw)
    return Requirements.model_validate(data)


def card(card_id: str = "c80", memory_gb: float = 80, **kw: Any) -> Card:
    data: dict[str, Any] = {
        "id": card_id,
        "name": card_id,
        "vendor": "test",
        "memory_gb": memory_gb,
        "memory_type": "HBM3",
        "memory_bandwidth_gbs": 3000,
        "tflops": {"fp32": 60, "bf16": 900, "fp16": 900},
        "tdp_w": 700,
        "peer_link": "nvlink",
        "peer_bandwidth_gbs": 900,
        "pcie_gen": 5,
        "form_factor": "sxm",
        "confidence": "E",
        "source": "test",
    }
    data.update(kw)
    return Card.model_validate(data)


def server(server_id: str = "s8", card_id: str = "c80", **kw: Any) -> Server:
    data: dict[str, Any] = {
        "id": server_id,
        "name": server_id,
        "card": card_id,
        "gpus": 8,
        "topology": "nvswitch",
        "peer_bandwidth_gbs": 900,
        "cpu": {"model": "x", "sockets": 2, "cores_total": 96, "pcie_lanes": 128, "base_ghz": 2.6},
        "ram_gb": 2048,
        "fabric": {"kind": "infiniband", "nics": 8, "nic_gbps": 400},
        "storage_write_gbs": 20,
        "power_kw": 10.2,
        "rack_units": 8,
        "cooling": ["air", "enhanced_air", "liquid"],
        "price": 2_000_000,
        "pricing": PRICE,
        "confidence": "E",
        "source": "test",
    }
    for key in ("cpu", "fabric"):
        if key in kw:
            data[key] = {**data[key], **kw.pop(key)}
    data.update(kw)
    return Server.model_validate(data)


def offer(offer_id: str = "o1", **kw: Any) -> ColoOffer:
    data: dict[str, Any] = {
        "id": offer_id,
        "provider": "test",
        "region": "jiangsu-south",
        "city": "Suzhou",
        "cooling": "enhanced_air",
        "rack_kw": 21,
        "rack_units": 42,
        "racks_available": 10,
        "rack_price_per_month": 20000,
        "power_price_per_kwh": 0.65,
        "pue": 1.3,
        "bandwidth_mbps": 100,
        "bgp": True,
        "bgp_lines": 4,
        "fabric": "infiniband",
        "fabric_gbps": 400,
        "ops_24h": True,
        "dual_power": True,
        "licences": ["IDC", "ISP"],
        "pricing": PRICE,
        "source": "test",
    }
    data.update(kw)
    return ColoOffer.model_validate(data)


def cloud(cloud_id: str = "cl1", card_id: str = "c80", **kw: Any) -> CloudOffer:
    data: dict[str, Any] = {
        "id": cloud_id,
        "provider": "test",
        "card": card_id,
        "gpus_per_instance": 8,
        "price_per_hour": 200,
        "region": "jiangsu-south",
        "fabric": "infiniband",
        "fabric_gbps": 400,
        "peer_bandwidth_gbs": 900,
        "storage_write_gbs": 4,
        "pricing": PRICE,
        "source": "test",
    }
    data.update(kw)
    return CloudOffer.model_validate(data)


LAYOUT: dict[str, Any] = {
    "nodes": 1,
    "gpus": 8,
    "tp": 1,
    "pp": 1,
    "dp": 8,
    "memory_per_gpu_gb": 50,
    "card_memory_gb": 85.5,
    "usable_memory_gb": 68.4,
    "comm_fraction": 0.05,
}


def layout(**kw: Any) -> dict[str, Any]:
    return {**LAYOUT, **kw}


def write(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
