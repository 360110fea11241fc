"""max-throughput buys the most tokens/s the budget affords (`candidates/fleets.py`): each
candidate is offered as fleets whose replicas all run at the largest batch the latency
targets allow, up to the most its budget could pay for."""

from __future__ import annotations

import json
from pathlib import Path

from gpusolve.candidates.fleets import counts

# A 70B chat service that only the Beijing cloud may host: of its two offers, the 1 x L40S
# instance (48 GB) cannot hold a 70B model in FP8 (70 GB) on one GPU, so the 8 x H100
# instance (catalog/cloud.yaml: 65,408 CNY a month, at most 4 instances) is the candidate.
SERVICE = """currency: CNY
horizon_months: 36
objective: max-throughput
regions:
  allowed: [beijing]
budget:
  total_max: {budget}
workloads:
  - name: chat-70b
    kind: inference
    model:
      preset: llama-3.1-70b
    precision: fp8
    prompt_tokens: 1000
    output_tokens: 300
    concurrency: 200
    tpot_ms: 50
    ttft_ms: 2000
"""
H100_INSTANCE = 65_408 * 36  # 2,354,688 CNY over the horizon


def _plan(gpusolve, tmp_path: Path, budget: int) -> dict:
    path = tmp_path / f"chat-{budget}.yaml"
    path.write_text(SERVICE.format(budget=budget), encoding="utf-8")
    result = gpusolve("plan", "-q", str(path), "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_the_budget_buys_the_largest_fleet_it_affords(gpusolve, tmp_path: Path) -> None:
    # 8,000,000 // 2,354,688 = 3 instances (of the 4 the offer rents): 7,064,064 CNY.
    plan = _plan(gpusolve, tmp_path, 8_000_000)
    (d,) = plan["deployments"]
    assert (d["cloud_offer"], d["servers"]) == ("cloud-8x-h100-beijing", 3)
    assert plan["cost"]["tco"] == 3 * H100_INSTANCE
    # One instance is what a budget of exactly one affords. Replicas are independent
    # copies, so three instances at the same layout and batch serve three times as much:
    # the plan's tokens/s is at least that of every single candidate the budget affords.
    one = _plan(gpusolve, tmp_path, H100_INSTANCE)
    (single,) = one["deployments"]
    assert single["servers"] == 1
    assert d["throughput"] >= 3 * single["throughput"] - 1
    # Each replica runs full: the sequences it holds are the largest batch, not the
    # batch that just meets 200 users.
    assert d["replicas"] * d["parallel"]["micro_batch"] > 200 * 1.2


def test_fleet_sizes_step_one_by_one_then_by_a_quarter_up_to_the_most() -> None:
    assert counts(2, 1) == []
    assert counts(1, 4) == [1, 2, 3, 4]
    # 1..9 one by one, then ceil(9 x 1.25) = 12, ceil(12 x 1.25) = 15, then the cap 16.
    assert counts(1, 16) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16]
