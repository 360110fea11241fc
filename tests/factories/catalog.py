"""Catalogue entries as validated models: a card, a server, a colocation offer and a cloud
offer, each valid as it stands, with any field overridable by keyword. The defaults are a
generic 80 GB SXM card in an 8-GPU NVSwitch server, a 21 kW enhanced-air rack offer in
southern Jiangsu and an 8-GPU cloud instance; every price is `illustrative`."""

from __future__ import annotations

from typing import Any

from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Server

PRICE = {"illustrative": True, "as_of": "2026-11", "source": "test"}


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


def colo_offer(offer_id: str = "o1", **kw: Any) -> ColoOffer:
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


def cloud_offer(cloud_id: str = "cl1", card_id: str = "c80", **kw: Any) -> CloudOffer:
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
