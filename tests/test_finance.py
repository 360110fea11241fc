"""Finance terms of the TCO (issue 24, deliverable 5): residual value, VAT, cloud price
tiers, colocation terms and N+1 spares. The arithmetic is in each test's comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.factories.files import card_entry, colo_entry, server_entry, write_catalog, write_reqs

from gpusolve.optimize import finance


def cloud(offer_id: str, per_hour: float, **terms: Any) -> dict[str, Any]:
    return {
        "id": offer_id,
        "provider": "Test cloud",
        "card": "t80",
        "gpus_per_instance": 8,
        "price_per_hour": per_hour,
        "region": "shanghai",
        "peer_bandwidth_gbs": 900,
        "pricing": {"illustrative": True, "as_of": "2026-11", "source": "test"},
        "source": "test",
        **terms,
    }


def _catalog(tmp: Path, per_hour: float = 80, **colo: Any) -> Path:
    offer = colo_entry("s", 20, cooling="enhanced_air")
    offer.update(colo)
    return write_catalog(
        tmp,
        "cat.yaml",
        cards=[card_entry("t80", 80)],
        servers=[server_entry("box", "t80", 8, 10.0, 2_000_000)],
        colo_offers=[offer],
        cloud_offers=[cloud("rent", per_hour)],
    )


SERVICE = {
    "name": "chat",
    "kind": "inference",
    "model": {"preset": "llama-2-7b"},
    "precision": "fp16",
    "context_len": 2048,
    "concurrency": 4,
    "target_tokens_per_s": 100,
}


def _plan(gpusolve, tmp: Path, reqs: dict[str, Any], catalog: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    path = write_reqs(tmp, {"horizon_months": 36, "workloads": [SERVICE], **reqs}, "r.yaml")
    result = gpusolve(
        "plan", "-q", "--format", "json", str(path), "--no-default-catalog", "--catalog",
        str(catalog),
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_residual_fraction_is_straight_line_to_salvage() -> None:
    # 36 of 60 months: 1 - 0.95 x 36/60 = 0.43; at and past 60 months, the 5% salvage.
    assert abs(finance.residual_fraction(36) - 0.43) < 1e-12
    assert finance.residual_fraction(60) == finance.residual_fraction(120) == 0.05
    assert finance.residual_fraction(0) == 1.0


def test_residual_value_flips_rent_to_buy(gpusolve, tmp_path: Path) -> None:
    # A service up every hour of 36 months (26,280 h), on one 8-GPU box or one 8-GPU cloud
    # instance.
    # Buying: 2,000,000 + rent 5,000 x 36 = 180,000 + bandwidth 100 Mbps x 50 x 36 = 180,000
    # + energy: 1,788/month idle (2.5 kW x 730 h x 1.4 x 0.7 = 1,788.5, half-even) x 36 =
    # 64,368 and 7 - 2.5 kW above idle for 26,280 h x 0.98 = 115,895: 2,540,263 CNY.
    # Renting: 80/h x 26,280 h = 2,102,400 CNY: cheaper, without residual value.
    # With it: the box is worth 43% of 2,000,000 = 860,000 after 36 months, so buying
    # costs 1,680,263: now cheaper than renting.
    cat = _catalog(tmp_path)
    without = _plan(gpusolve, tmp_path, {"finance": {"residual_value": False}}, cat)
    assert without["deployments"][0]["mode"] == "cloud"
    assert without["cost"]["tco"] == 2_102_400
    plan = _plan(gpusolve, tmp_path, {}, cat)
    assert plan["deployments"][0]["mode"] == "owned"
    parts = plan["cost"]["breakdown"]
    assert parts["residual_value"] == -860_000
    assert parts["servers_capex"] == plan["cost"]["capex"] == 2_000_000  # the budget's figure
    assert plan["cost"]["tco"] == 2_540_263 - 860_000
    (line,) = [i for i in parts["items"] if i["kind"] == "residual_value"]
    assert (line["quantity"], line["unit_price"]) == (1, -860_000)
    assert "43.0% of 2,000,000" in line["detail"]
