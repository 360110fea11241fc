"""Hand-computed planner cases; the arithmetic is in each test's comments."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from plan_support import example, shipped, write_catalog, write_reqs

H100 = next(c for c in shipped("cards") if c["id"] == "h100-sxm")


def card(card_id: str, memory_gb: float) -> dict[str, Any]:
    """An H100 with another memory size; the device then reports memory_gb GiB."""
    c = copy.deepcopy(H100)
    c.pop("memory_reported_mib", None)
    c.pop("memory_source", None)
    c.pop("export_cn", None)  # a hypothetical card: no export status, so market cn may buy it
    c.update(id=card_id, name=f"Test {memory_gb:g} GB", memory_gb=memory_gb)
    return c


def box(server_id: str, card_id: str, gpus: int, power_kw: float, price: float) -> dict[str, Any]:
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


def site(site_id: str, rack_kw: float, racks: int = 10, cooling: str = "air") -> dict[str, Any]:
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


def plan_json(gpusolve, *args: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    result = gpusolve("plan", "-q", "--format", "json", *args)
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_fits_80gb_except_for_headroom_goes_to_next_card(gpusolve, tmp_path: Path) -> None:
    # Qwen2.5-32B (32.76e9 parameters) served in FP16: weights 32.76e9 x 2 B = 65.5 GB,
    # the KV cache of one 1,024-token request at its mean live context (~780 tokens,
    # 2 x 64 layers x 8 KV heads x 128 x 2 B each) = 0.2 GB, plus the 1.0 GB CUDA context
    # (one GPU, no NCCL buffers): ~66.8 GB per GPU.
    # A "76 GB" card reports 76 GiB = 81.6 GB and keeps 81.6 x (1 - 0.2) = 65.3 GB usable:
    # refused. A "96 GB" card gives 103.1 x 0.8 = 82.5 GB: chosen, although it costs more.
    cat = write_catalog(
        tmp_path,
        "cat.yaml",
        cards=[card("t80", 76), card("t96", 96)],
        servers=[box("box-80", "t80", 1, 1.2, 100_000), box("box-96", "t96", 1, 1.2, 150_000)],
        colo_offers=[site("suzhou-10kw", 10)],
    )
    reqs = {
        "workloads": [
            {
                "name": "serve-32b",
                "kind": "inference",
                "model": {"preset": "qwen2.5-32b"},
                "precision": "fp16",
                "context_len": 1024,
                "concurrency": 1,
                "target_tokens_per_s": 5,
            }
        ]
    }
    plan = plan_json(
        gpusolve, str(write_reqs(tmp_path, reqs)), "--no-default-catalog", "--catalog", str(cat)
    )
    (dep,) = plan["deployments"]
    assert dep["server"] == "box-96"
    assert 65.3 < dep["memory_per_gpu_gb"] <= 82.5
    # With 10% headroom the 76 GB card keeps 73.4 GB usable, and its cheaper server wins.
    reqs["headroom"] = 0.10
    plan = plan_json(
        gpusolve,
        str(write_reqs(tmp_path, reqs, "r2.yaml")),
        "--no-default-catalog",
        "--catalog",
        str(cat),
    )
    assert plan["deployments"][0]["server"] == "box-80"


def test_twenty_kw_server_is_refused_by_ten_kw_racks(gpusolve, tmp_path: Path) -> None:
    # One 8-GPU server drawing 20 kW; the only racks are 10 kW: it cannot be hosted
    # (20 > 10), and with no cloud offer there is no plan at all.
    servers = [box("hot-20kw", "t80", 8, 20.0, 2_000_000)]
    cards = [card("t80", 80)]
    only_10kw = write_catalog(
        tmp_path, "a.yaml", cards=cards, servers=servers, colo_offers=[site("rack-10kw", 10)]
    )
    reqs = write_reqs(
        tmp_path,
        {
            "workloads": [
                {
                    "name": "serve-13b",
                    "kind": "inference",
                    "model": {"preset": "llama-2-13b"},
                    "precision": "fp16",
                    "context_len": 2048,
                    "concurrency": 4,
                    "target_tokens_per_s": 100,
                }
            ]
        },
    )
    result = gpusolve("plan", "-q", str(reqs), "--no-default-catalog", "--catalog", str(only_10kw))
    assert result.code == 1, result.out
    assert "10 kW racks; one server draws 20 kW" in result.out
    # A 25 kW rack offer takes it: one rack, one server.
    with_25kw = write_catalog(
        tmp_path,
        "b.yaml",
        cards=cards,
        servers=servers,
        colo_offers=[site("rack-10kw", 10), site("rack-25kw", 25)],
    )
    plan = plan_json(gpusolve, str(reqs), "--no-default-catalog", "--catalog", str(with_25kw))
    assert plan["deployments"][0]["site"] == "rack-25kw"
    assert plan["sites"][0]["racks"] == 1


def _servers(plan: dict[str, Any]) -> int:
    return sum(sum(s["servers"].values()) for s in plan["sites"])


def test_day_night_sharing_halves_servers(gpusolve, tmp_path: Path) -> None:
    # Two identical services, one by day and one by night, on a catalogue with one server
    # model: each needs the same n servers. Sharing the servers across the two slots needs
    # n; running both around the clock needs 2n. Headroom is fixed so that no rule makes
    # the two cases differ in memory.
    cat = write_catalog(
        tmp_path,
        "cat.yaml",
        cards=[card("t80", 80)],
        servers=[box("box-2x80", "t80", 2, 2.0, 200_000)],
        colo_offers=[site("suzhou-10kw", 10, racks=20)],
    )
    service = {
        "kind": "inference",
        "model": {"preset": "llama-2-13b"},
        "precision": "fp16",
        "context_len": 4096,
        "concurrency": 64,
        "target_tokens_per_s": 1500,
    }
    reqs = {
        "headroom": 0.25,
        "workloads": [
            {"name": "day-chat", "schedule": "day", **service},
            {"name": "night-chat", "schedule": "night", **service},
        ],
    }
    shared = plan_json(
        gpusolve, str(write_reqs(tmp_path, reqs)), "--no-default-catalog", "--catalog", str(cat)
    )
    for w in reqs["workloads"]:
        w["schedule"] = "always"
    apart = plan_json(
        gpusolve,
        str(write_reqs(tmp_path, reqs, "r2.yaml")),
        "--no-default-catalog",
        "--catalog",
        str(cat),
    )
    n = shared["deployments"][0]["servers"]
    assert n >= 1
    assert _servers(shared) == n
    assert _servers(apart) == 2 * n


def test_shipped_shared_example_reuses_servers(gpusolve, tmp_path: Path) -> None:
    # The shipped day/night example: chat by day and LoRA by night on the same server model
    # at the same site need max(a, b) servers, not a + b. Here each shift alone needs one
    # 8-GPU server, so the plan buys one; run around the clock, the two workloads need at
    # least two servers (the optimiser may then pick other, cheaper models) and cost more.
    shared = example("chat-day-lora-night.yaml")
    plan = plan_json(gpusolve, str(write_reqs(tmp_path, shared)))
    deps = {d["workload"]: d for d in plan["deployments"]}
    day, night = deps["chat-13b"], deps["lora-7b"]
    assert day["mode"] == night["mode"] == "owned"
    assert (day["server"], day["site"]) == (night["server"], night["site"])
    assert _servers(plan) == max(day["servers"], night["servers"])
    for w in shared["workloads"]:
        w["schedule"] = "always"
    apart = plan_json(gpusolve, str(write_reqs(tmp_path, shared, "apart.yaml")))
    assert _servers(apart) >= 2 * _servers(plan)
    assert apart["cost"]["tco"] > plan["cost"]["tco"]


def test_rental_beats_purchase_for_a_three_day_job(gpusolve, tmp_path: Path) -> None:
    # One 7B full fine-tune of 1e9 tokens, once, within 72 h: 6 x 7e9 x 1e9 = 4.2e19 FLOP,
    # a few hours on one rented 8-GPU instance (a few hundred to a few thousand CNY),
    # against at least ~0.2 M CNY to buy any server that holds it.
    reqs = write_reqs(
        tmp_path,
        {
            "horizon_months": 36,
            "workloads": [
                {
                    "name": "ft-once",
                    "kind": "full_finetune",
                    "model": {"preset": "llama-2-7b"},
                    "tokens": 1e9,
                    "runs": 1,
                    "deadline_hours": 72,
                }
            ],
        },
    )
    plan = plan_json(gpusolve, str(reqs))
    assert plan["deployments"][0]["mode"] == "cloud"
    assert plan["cost"]["capex"] == 0
    assert plan["cost"]["tco"] < 20_000


def test_purchase_beats_rental_for_a_36_month_service(gpusolve, tmp_path: Path) -> None:
    # A 13B service around the clock for 36 months = 26,280 h. The cheapest rental that
    # meets 2,000 tokens/s is an 8-GPU instance at tens of CNY per hour (> 1 M CNY over the
    # horizon); a bought 8-GPU server plus a rack costs less over three years.
    reqs = write_reqs(
        tmp_path,
        {
            "horizon_months": 36,
            "market": "global",  # the economics of owning, not which cards China may buy
            "workloads": [
                {
                    "name": "svc",
                    "kind": "inference",
                    "model": {"preset": "llama-2-13b"},
                    "precision": "fp16",
                    "context_len": 4096,
                    "concurrency": 32,
                    "target_tokens_per_s": 2000,
                }
            ],
        },
    )
    plan = plan_json(gpusolve, str(reqs), "--why-not", "cloud-8x-a100-80gb-zhejiang")
    dep = plan["deployments"][0]
    assert dep["mode"] == "owned"
    assert plan["cost"]["capex"] > 0
    (reason,) = [r for r in plan["why_not"]["svc"] if "dearer" in r]
    assert int(reason.split("dearer by ")[1].split()[0].replace(",", "")) > 0
