"""Input files: catalogue entries as a user writes them (dicts, dumped to YAML), and writers
of catalogue, requirements and rule files (from dicts, or as text) into a test's folder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from tests.support.shipped import shipped

SHIPPED_H100 = next(c for c in shipped("cards") if c["id"] == "h100-sxm")


def card_entry(card_id: str, memory_gb: float) -> dict[str, Any]:
    """An H100 with another memory size; the device then reports memory_gb GiB."""
    c = copy.deepcopy(SHIPPED_H100)
    c.pop("memory_reported_mib", None)
    c.pop("memory_source", None)
    c.pop("export_cn", None)  # a hypothetical card: no export status, so market cn may buy it
    c.update(id=card_id, name=f"Test {memory_gb:g} GB", memory_gb=memory_gb)
    return c


def server_entry(
    server_id: str, card_id: str, gpus: int, power_kw: float, price: float
) -> dict[str, Any]:
    return {
        "id": server_id,
        "name": f"Test box {server_id}",
        "card": card_id,
        "gpus": gpus,
        "topology": "nvswitch" if gpus > 1 else "pcie",
        "peer_bandwidth_gbs": 900 if gpus > 1 else 0,
        "cpu": {
            "model": "test",
            "sockets": 2,
            "cores_total": 64,
            "pcie_lanes": 128,
            "base_ghz": 2.6,
        },
        "ram_gb": 1024,
        "fabric": {"kind": "ethernet", "nics": 1, "nic_gbps": 25},
        "storage_write_gbs": 3,
        "power_kw": power_kw,
        "rack_units": 4,
        "cooling": ["air", "enhanced_air", "liquid"],
        "price": price,
        "pricing": {"illustrative": True, "as_of": "2026-11", "source": "test"},
        "confidence": "E",
        "source": "test",
    }


def colo_entry(
    site_id: str, rack_kw: float, racks: int = 10, cooling: str = "air"
) -> dict[str, Any]:
    return {
        "id": site_id,
        "provider": "Test IDC",
        "region": "jiangsu-south",
        "city": "Suzhou",
        "cooling": cooling,
        "rack_kw": rack_kw,
        "rack_units": 42,
        "racks_available": racks,
        "rack_price_per_month": 5000,
        "power_price_per_kwh": 0.7,
        "pue": 1.4,
        "bandwidth_mbps": 100,
        "bandwidth_price_per_mbps_month": 50,
        "bgp": True,
        "bgp_lines": 3,
        "fabric": "ethernet",
        "ops_24h": True,
        "dual_power": True,
        "certifications": ["ISO9001", "ISO27001"],
        "licences": ["IDC", "ISP"],
        "pricing": {"illustrative": True, "as_of": "2026-11", "source": "test"},
        "source": "test",
    }


def write_catalog(tmp: Path, name: str, **kinds: list[dict[str, Any]]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump({"currency": "CNY", **kinds}, allow_unicode=True))
    return path


def write_reqs(tmp: Path, data: dict[str, Any], name: str = "reqs.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return path


def write_file(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    """A file as written (a rule file, requirements with comments, broken YAML)."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rule_file(tmp_path: Path, *rules: dict[str, Any], name: str = "mine.yaml") -> Path:
    """A rule file holding `rules` (each as in rules/*.yaml: id, source, title, when, ...)."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"rules": list(rules)}))
    return path
