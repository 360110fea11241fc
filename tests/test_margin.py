"""The margin a plan buys above each target: sized as stated, defaulted per kind of workload
from the validation gates, and every deployment of a plan and of a schedule meets
target x (1 + margin), its spare printed against the target as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.support.phased import CHAT_NORTH, QUARTERS
from tests.support.shipped import ROOT

from gpusolve.candidates.margin import margin_of, sized, with_margin
from gpusolve.models.requirements import Requirements, make_workload

CHAT = {
    "name": "chat",
    "kind": "inference",
    "model": {"preset": "llama-2-7b"},
    "concurrency": 32,
    "target_tokens_per_s": 4000,
}
TUNE = {
    "name": "tune",
    "kind": "full_finetune",
    "model": {"preset": "llama-2-7b"},
    "tokens": 1e9,
    "deadline_hours": 72,
}


def test_serving_is_sized_for_target_times_one_plus_margin() -> None:
    w = with_margin(make_workload(CHAT), 0.2)
    assert w.kind == "inference"
    assert w.target_tokens_per_s == pytest.approx(4800)  # 4,000 x 1.2
    assert w.concurrency == 39  # 32 x 1.2 = 38.4 users, whole users up


def test_a_request_rate_grows_with_the_margin_and_with_demand_everywhere() -> None:
    # 2 requests/s of 200-token prompts and 100-token answers, margin 0.25: sized for 2.5
    # requests/s (and 250 tokens/s); a schedule's period at 3x demand, and a scenario at
    # 3x, serve 6 requests/s.
    from gpusolve.models.periods import Period
    from gpusolve.plan.phased.inputs import for_period
    from gpusolve.plan.twostage import _grown

    rated = {
        "name": "chat",
        "kind": "inference",
        "model": {"preset": "llama-2-7b"},
        "request_rate": 2.0,
        "prompt_tokens": 200,
        "output_tokens": 100,
    }
    w = with_margin(make_workload(rated), 0.25)
    assert w.request_rate == pytest.approx(2.5)
    assert w.target_tokens_per_s == pytest.approx(250)  # 2 x 100 x 1.25
    grown = make_workload({**rated, "demand_by_period": [1, 3]})
    second = for_period(grown, 6, Period(1, 3, 6))
    assert second.request_rate == pytest.approx(6.0)
    assert _grown(make_workload(rated), 3.0).request_rate == pytest.approx(6.0)


def test_training_is_sized_to_finish_by_deadline_over_one_plus_margin() -> None:
    w = with_margin(make_workload(TUNE), 0.15)
    assert w.deadline_hours == pytest.approx(62.6087, abs=1e-4)  # 72 / 1.15


def test_margin_defaults_per_kind_and_overrides_in_order() -> None:
    reqs = Requirements.model_validate({"workloads": [CHAT, TUNE]})
    chat, tune = reqs.workloads
    # The validation gates: serving throughput +-20 %, training throughput +-15 %.
    assert (margin_of(chat, reqs), margin_of(tune, reqs)) == (0.20, 0.15)
    every = Requirements.model_validate(
        {"margin": 0.05, "workloads": [CHAT, {**TUNE, "margin": 0}]}
    )
    chat, tune = every.workloads
    assert (margin_of(chat, every), margin_of(tune, every)) == (0.05, 0.0)
    # The requirements as written are untouched; only the sized copy moves.
    grown = sized(every)
    assert every.workloads[0].kind == grown.workloads[0].kind == "inference"
    assert every.workloads[0].target_tokens_per_s == 4000
    assert grown.workloads[0].target_tokens_per_s == pytest.approx(4200)


@pytest.mark.parametrize("margin", [-0.1, 1.5])
def test_a_margin_outside_zero_to_one_is_refused(margin: float) -> None:
    with pytest.raises(ValueError, match="margin"):
        Requirements.model_validate({"margin": margin, "workloads": [CHAT]})


def _plan(gpusolve, path: Path) -> dict:
    result = gpusolve("plan", "-q", str(path), "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_a_plan_delivers_its_target_times_one_plus_margin(gpusolve, tmp_path: Path) -> None:
    # 200 tokens/s for 4 users, margin 0.5: every deployment delivers >= 300 tokens/s and
    # holds >= 6 users at once, and says so against the 200 as written.
    reqs = tmp_path / "chat.yaml"
    reqs.write_text(CHAT_NORTH + "margin: 0.5\n", encoding="utf-8")
    plan = _plan(gpusolve, reqs)
    (d,) = plan["deployments"]
    assert d["throughput"] >= 300
    assert (d["target"], d["target_unit"], d["margin"]) == (200, "tokens/s", 0.5)
    assert d["spare"] == pytest.approx(d["throughput"] / 200 - 1, abs=1e-3)


def test_a_training_run_finishes_by_deadline_over_one_plus_margin(gpusolve, tmp_path: Path) -> None:
    # The shipped 7B fine-tune with a 12 h deadline and margin 0.5: every run the plan
    # takes lasts at most 12 / 1.5 = 8 h of the estimate.
    data = yaml.safe_load((ROOT / "examples" / "finetune-7b-deadline.yaml").read_text())
    data["workloads"][0]["deadline_hours"] = 12
    data["margin"] = 0.5
    reqs = tmp_path / "ft.yaml"
    reqs.write_text(yaml.safe_dump(data), encoding="utf-8")
    (d,) = _plan(gpusolve, reqs)["deployments"]
    assert d["time_to_train_h"] <= 8.0
    assert (d["target"], d["target_unit"]) == (12, "h")
    assert d["spare"] == pytest.approx(12 / d["time_to_train_h"] - 1, abs=1e-2)


def test_every_period_of_a_schedule_delivers_its_target_with_margin(
    gpusolve, tmp_path: Path
) -> None:
    # Demand 200 then 800 tokens/s (x4 in the second quarter), margin 0.5: each period's
    # deployment delivers >= 300 and >= 1,200 tokens/s.
    grown = CHAT_NORTH.replace(
        "    target_tokens_per_s: 200\n",
        "    target_tokens_per_s: 200\n    demand_by_period: [1, 4]\n",
    )
    reqs = tmp_path / "phased.yaml"
    reqs.write_text(grown + "margin: 0.5\n" + QUARTERS, encoding="utf-8")
    schedule = _plan(gpusolve, reqs)
    delivered = [[d["throughput"] for d in p["deployments"]] for p in schedule["periods"]]
    targets = [[d["target"] for d in p["deployments"]] for p in schedule["periods"]]
    assert targets == [[200], [800]]
    assert delivered[0][0] >= 300 and delivered[1][0] >= 1200


def test_the_plan_text_prints_the_spare_against_the_target(gpusolve, tmp_path: Path) -> None:
    reqs = tmp_path / "chat.yaml"
    reqs.write_text(CHAT_NORTH + "margin: 0.5\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs))
    assert result.code == 0, result.err
    line = next(x for x in result.out.splitlines() if x.strip().startswith("target"))
    assert "200 tokens/s + 50% margin" in line and "spare against the target" in line


def test_a_candidate_the_margin_alone_keeps_out_is_named_with_the_margin_that_lets_it_in(
    gpusolve, tmp_path: Path
) -> None:
    # The shipped 70B pretraining (deadline 1,440 h, training margin 0.15: 1,252.2 h). The
    # cloud's largest H800 layout (8 instances, the offer's most) misses 1,252.2 h but meets
    # 1,440 h, so the plan buys; it must say so, with the rental's price worked by hand
    # (8 instances x 2 monthly terms x 56,064 CNY = 897,024 CNY for one 54-day run) and a
    # margin that, written in, makes the plan weigh it and rent it at that price.
    example = ROOT / "examples" / "pretrain-70b-infiniband.yaml"
    plan = _plan(gpusolve, example)
    (miss,) = [m for m in plan["margin_misses"] if m["candidate"] == "cloud-8x-h800-shanghai"]
    assert 1440 / 1.15 < miss["hours"] <= 1440
    assert miss["spare"] == pytest.approx(1440 / miss["hours"] - 1, abs=1e-4)
    assert (miss["servers"], miss["gpus"], miss["margin"]) == (8, 64, 0.15)
    assert miss["rental_cost"] == 8 * 2 * 56_064
    assert all(d["cloud_offer"] is None for d in plan["deployments"])
    let_in = int(miss["spare"] * 100) / 100
    text = gpusolve("plan", "-q", str(example)).out
    assert f"`margin: {let_in:g}` on pretrain-70b" in text
    # Written in, that margin lets the rental into the plan, which rents it at that price.
    path = tmp_path / example.name
    path.write_text(example.read_text(encoding="utf-8") + f"margin: {let_in}\n", encoding="utf-8")
    rented = _plan(gpusolve, path)
    (d,) = rented["deployments"]
    assert d["cloud_offer"] == "cloud-8x-h800-shanghai" and d["servers"] == 8
    assert rented["cost"]["tco"] == 8 * 2 * 56_064
    assert not [m for m in rented["margin_misses"] if m["candidate"] == d["cloud_offer"]]


def test_the_memo_says_the_margin_decides_the_plan(gpusolve) -> None:
    # A finance lead reads the memo, not the plan text: the rental the margin keeps out
    # (897,024 CNY against a 48.8M purchase) comes first among what would change it.
    example = str(ROOT / "examples" / "pretrain-70b-infiniband.yaml")
    result = gpusolve("plan", "-q", example, "--format", "markdown", "--no-sensitivity")
    assert result.code == 0, result.err
    facts = result.out.split("**What would change the decision**")[1]
    first = facts.strip().splitlines()[0]
    assert first.startswith("1. the 15% margin on pretrain-70b decides the plan: renting 8 x")
    assert "897,024 CNY over the horizon" in first and "`margin: 0.11`" in first
