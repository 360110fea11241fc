"""No plan: exit 1 and the conflicting requirements, in the user's words, with the fix."""

from __future__ import annotations

import json
from pathlib import Path

from tests.factories.files import write_catalog, write_reqs
from tests.support.shipped import owned_only, shipped


def test_deadline_too_short_for_the_biggest_catalogue(gpusolve, tmp_path: Path) -> None:
    # 70B on 3e11 tokens = 1.26e23 FLOP; even 64 servers of the fastest card need days.
    reqs = write_reqs(
        tmp_path,
        {
            "workloads": [
                {
                    "name": "pretrain-70b",
                    "kind": "pretrain",
                    "model": {"preset": "llama-2-70b"},
                    "seq_len": 4096,
                    "global_batch": 1024,
                    "tokens": 3e11,
                    "deadline_hours": 24,
                }
            ]
        },
    )
    result = gpusolve("plan", "-q", str(reqs))
    assert result.code == 1
    assert "deadline of 24 h for pretrain-70b" in result.out
    assert "feasible only with a deadline" in result.out
    data = json.loads(gpusolve("plan", "-q", str(reqs), "--format", "json").out)
    assert [c["requirement"] for c in data["infeasibility"]["conflicting"]] == [
        "deadline:pretrain-70b"
    ]


def test_budget_too_small(gpusolve, tmp_path: Path) -> None:
    # The cheapest way to run this job is a few hours of a rented 8-GPU instance
    # (hundreds of CNY, i.e. tens of CNY per month over 12 months): a 1 CNY monthly cap
    # cannot hold, and the explanation says by how much it must rise.
    reqs = write_reqs(
        tmp_path,
        {
            "horizon_months": 12,
            "budget": {"capex_max": 1000, "monthly_max": 1},
            "workloads": [
                {
                    "name": "ft",
                    "kind": "full_finetune",
                    "model": {"params_b": 7},
                    "tokens": 1e9,
                    "deadline_hours": 96,
                }
            ],
        },
    )
    result = gpusolve("plan", "-q", str(reqs), "--format", "json")
    assert result.code == 1
    conflicting = json.loads(result.out)["infeasibility"]["conflicting"]
    assert [c["requirement"] for c in conflicting] == ["monthly"]
    assert "feasible if the monthly cap is" in conflicting[0]["suggestion"]


def test_capex_cap_without_cloud(gpusolve, tmp_path: Path) -> None:
    # Owned hardware only and a 1,000 CNY capex cap: no server costs that little.
    reqs = write_reqs(
        tmp_path,
        {
            "budget": {"capex_max": 1000},
            "workloads": [
                {
                    "name": "serve",
                    "kind": "inference",
                    "model": {"preset": "llama-2-7b"},
                    "context_len": 2048,
                    "concurrency": 8,
                    "target_tokens_per_s": 200,
                }
            ],
        },
    )
    result = gpusolve("plan", "-q", str(reqs), *owned_only())
    assert result.code == 1
    assert "capex cap of 1,000 CNY" in result.out
    assert "feasible if the capex cap is" in result.out


def test_region_without_liquid_racks_for_a_liquid_only_server(gpusolve, tmp_path: Path) -> None:
    # The only server needs liquid cooling; southern Jiangsu has no liquid racks in the
    # shipped catalogue, so a workload limited to 苏南 has nowhere to go: the conflict is
    # the region limit, and the fix names the regions that do have liquid racks.
    liquid = [s for s in shipped("servers") if s["cooling"] == ["liquid"]]
    assert liquid, "the shipped catalogue should have a liquid-only server"
    servers = write_catalog(tmp_path, "servers.yaml", servers=liquid)
    reqs = write_reqs(
        tmp_path,
        {
            "market": "global",  # the only server's card is restricted in market cn
            "workloads": [
                {
                    "name": "ft-13b",
                    "kind": "full_finetune",
                    "model": {"preset": "llama-2-13b"},
                    "tokens": 1e9,
                    "deadline_hours": 240,
                    "regions": ["苏南"],
                }
            ],
        },
    )
    result = gpusolve(
        "plan",
        "-q",
        str(reqs),
        *owned_only(servers),
        "--format",
        "json",
    )
    assert result.code == 1
    conflicting = json.loads(result.out)["infeasibility"]["conflicting"]
    assert [c["requirement"] for c in conflicting] == ["regions:ft-13b"]
    assert "苏南" in conflicting[0]["detail"]
    assert "jiangsu-north" in conflicting[0]["suggestion"]
