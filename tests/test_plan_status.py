"""Three outcomes, each with its own status and exit code: a plan (0: optimal, or feasible
with its gap), proven infeasible (1, with the explanation), and no answer within the time
limit (3: "timeout", with the bound proven so far). The conflict explanation runs only
after infeasibility is proven, and what it prints is true: minimal sets, moves in the
right direction by a positive amount, and an honest word when it ran out of time."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from tests.factories.files import rule_file, write_reqs
from tests.factories.instances import ONE
from tests.support.optimize_reference import evaluate_all, optimum, random_instance
from tests.support.shipped import CLOUD, COLO, ROOT, SERVERS, owned_only

import gpusolve.explain.infeasible as explain_module
from gpusolve.analyses.frontier import frontier_status
from gpusolve.models.frontier import FrontierPoint
from gpusolve.optimize import explain as optimize_explain
from gpusolve.optimize import solve as solve_module
from gpusolve.optimize.ir import Instance, Solution, SolveConfig

sys.path.insert(0, str(ROOT / "benchmarks"))

from generator import generate

CHAT = ROOT / "examples" / "chat-day-lora-night.yaml"
FINETUNE = ROOT / "examples" / "finetune-7b-deadline.yaml"


def _plan_json(gpusolve: Any, *args: str) -> tuple[int, dict[str, Any]]:
    result = gpusolve("plan", "-q", *args, "--format", "json")
    assert "Traceback" not in result.err, result.err
    data: dict[str, Any] = json.loads(result.out)
    return result.code, data


def _out_of_time(
    bound: int | None,
) -> Any:
    """A stand-in for `solve` that finds nothing in time, with a proven bound."""

    def solve(instance: Instance, config: SolveConfig | None = None, options: Any = None) -> Any:
        return Solution(status="unknown", best_bound=bound)

    return solve


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a conflict was explained that was never proven")


# --------------------------------------------------------------------------- timeout (3)


def test_no_plan_in_time_is_a_timeout_with_exit_3(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(solve_module, "solve", _out_of_time(1_234_567))
    monkeypatch.setattr(explain_module, "explain_infeasible", _never)
    code, data = _plan_json(gpusolve, str(CHAT), "--time-limit", "0.5")
    assert code == 3
    assert data["status"] == "timeout" and data["solver"]["status"] == "timeout"
    assert data["infeasibility"] is None and data["cost"] is None
    assert data["timed_out"]["best_bound"] == 1_234_567
    assert data["timed_out"]["time_limit_s"] == 0.5
    assert "try a longer --time-limit" in data["timed_out"]["reason"]
    text = gpusolve("plan", "-q", str(CHAT), "--time-limit", "0.5")
    assert text.code == 3
    assert "No plan found within the time limit" in text.out
    assert "no plan found in 0.5 s" in text.out and "at least 1,234,567 CNY" in text.out
    assert "No feasible plan" not in text.out and "conflict" not in text.out
    memo = gpusolve("plan", "-q", str(CHAT), "--time-limit", "0.5", "--format", "markdown")
    assert memo.code == 3 and "No plan found within the time limit" in memo.out


def test_a_timeout_without_a_bound_says_so(gpusolve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solve_module, "solve", _out_of_time(None))
    code, data = _plan_json(gpusolve, str(CHAT), "--time-limit", "0.2")
    assert code == 3 and data["timed_out"]["best_bound"] is None
    assert "no bound beyond the trivial one" in data["timed_out"]["reason"]


def test_a_feasible_example_at_the_smallest_time_limit_never_exits_1(gpusolve: Any) -> None:
    # The case: it printed "No feasible plan" with nonsense conflicts. Depending on
    # the machine's speed the answer is a plan (0) or a timeout (3), never "infeasible".
    code, data = _plan_json(gpusolve, str(CHAT), "--time-limit", "0.1")
    assert code in (0, 3)
    assert data["status"] == ("timeout" if code == 3 else data["solver"]["status"])
    assert data["infeasibility"] is None


def test_a_large_instance_at_a_tiny_limit_is_never_called_infeasible() -> None:
    # Benchmark scale M (10 workloads x 30 SKUs x 10 sites): 0.1 s finds nothing, which
    # is "unknown", never "infeasible"; with more time it has a plan.
    instance = generate("M", 0)
    quick = solve_module.solve(instance, SolveConfig(time_limit_s=0.1, workers=1))
    assert quick.status in ("unknown", "feasible", "optimal")
    if quick.status == "unknown":
        assert not quick.choices
        assert quick.best_bound is None or quick.best_bound >= 0


# --------------------------------------------------------------------------- a plan (0)


def test_a_plan_found_before_the_proof_is_feasible_with_its_gap(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = solve_module.solve

    def unproven(instance: Instance, config: SolveConfig | None = None, options: Any = None) -> Any:
        found = real(instance, config, options)
        assert found.objective_value is not None
        return dataclasses.replace(
            found, status="feasible", best_bound=found.objective_value * 9 // 10
        )

    monkeypatch.setattr(solve_module, "solve", unproven)
    code, data = _plan_json(gpusolve, str(FINETUNE))
    assert code == 0 and data["status"] == "feasible"
    solver = data["solver"]
    assert not solver["proven_optimal"]
    value, bound = solver["objective_value"], solver["best_bound"]
    assert bound < value
    assert solver["gap"] == pytest.approx((value - bound) / value, abs=1e-6)
    text = gpusolve("plan", "-q", str(FINETUNE))
    assert text.code == 0
    assert f"within {solver['gap']:.2%} of the best bound {bound:,.0f}" in text.out


# --------------------------------------------------------------------------- infeasible (1)

# A 7B full fine-tune on bought servers only: 12 h needs an 8-card H800 box (2.1 M CNY);
# a 1 M cap alone buys a slower box. Together they conflict; each alone is fine. Market
# global: in market cn the export filter on the H800 would be a third member of the conflict.
CAPPED_DEADLINE = {
    "market": "global",
    "budget": {"capex_max": 1_000_000},
    "workloads": [
        {
            "name": "ft",
            "kind": "full_finetune",
            "model": {"params_b": 7},
            "tokens": 2.0e9,
            "deadline_hours": 12,
        }
    ],
}


def _with(data: dict[str, Any], capex: float | None, deadline_h: float | None) -> dict[str, Any]:
    out = json.loads(json.dumps(data))
    if capex is None:
        del out["budget"]
    else:
        out["budget"]["capex_max"] = capex
    if deadline_h is None:
        del out["workloads"][0]["deadline_hours"]
    else:
        out["workloads"][0]["deadline_hours"] = deadline_h
    return out


def test_conflict_is_minimal_and_its_moves_are_enough(gpusolve: Any, tmp_path: Path) -> None:
    reqs = write_reqs(tmp_path, CAPPED_DEADLINE)
    code, data = _plan_json(gpusolve, str(reqs), *owned_only())
    assert code == 1 and data["status"] == "infeasible"
    inf = data["infeasibility"]
    assert inf["minimal"] and not inf["timed_out"]
    by_name = {c["requirement"]: c for c in inf["conflicting"]}
    assert set(by_name) == {"capex", "deadline:ft"}
    # Minimal: dropping either member admits a plan (re-solved from scratch).
    for capex, deadline in ((None, 12), (1_000_000, None)):
        again = write_reqs(tmp_path, _with(CAPPED_DEADLINE, capex, deadline), "drop.yaml")
        assert _plan_json(gpusolve, str(again), *owned_only())[0] == 0, (capex, deadline)
    # The moves are upwards, positive, and enough on their own.
    capex_hint = by_name["capex"]["suggestion"]
    assert capex_hint.startswith("feasible if the capex cap is ") and "-" not in capex_hint
    needed_cny = int(capex_hint.split("at least ")[1].rstrip(")").replace(",", ""))
    assert needed_cny > 1_000_000
    deadline_hint = by_name["deadline:ft"]["suggestion"]
    assert deadline_hint.startswith("feasible only with a deadline ") and "-" not in deadline_hint
    needed_h = float(deadline_hint.split("at least ")[1].split(" h")[0])
    later_h = float(deadline_hint.split("deadline ")[1].split(" h later")[0])
    assert later_h > 0 and needed_h == pytest.approx(12 + later_h, abs=0.05)
    for capex, deadline in ((needed_cny, 12), (1_000_000, needed_h)):
        moved = write_reqs(tmp_path, _with(CAPPED_DEADLINE, capex, deadline), "moved.yaml")
        assert _plan_json(gpusolve, str(moved), *owned_only())[0] == 0, (capex, deadline)
    # ... and the deadline's is the least, to its 0.1 h rounding.
    short = write_reqs(tmp_path, _with(CAPPED_DEADLINE, 1_000_000, needed_h - 0.1), "short.yaml")
    assert _plan_json(gpusolve, str(short), *owned_only())[0] == 1


def test_a_rule_in_the_conflict_is_named_by_its_id(gpusolve: Any, tmp_path: Path) -> None:
    rules = rule_file(
        tmp_path,
        {
            "id": "big-cards-only",
            "source": "H29",
            "title": "Only cards of 140 GB or more",
            "when": "true",
            "require": {"card": "card.memory_gb >= 140"},
        },
    )
    reqs = write_reqs(tmp_path, _with(CAPPED_DEADLINE, 1_000_000, 1000))
    code, data = _plan_json(gpusolve, str(reqs), *owned_only(), "--rules", str(rules))
    assert code == 1
    conflicting = data["infeasibility"]["conflicting"]
    assert [c["requirement"] for c in conflicting] == ["capex", "rule:big-cards-only"]
    rule = conflicting[1]
    assert "big-cards-only" in rule["detail"] and "big-cards-only" in rule["suggestion"]


def test_an_explanation_out_of_time_says_so(
    gpusolve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reqs = write_reqs(tmp_path, CAPPED_DEADLINE)
    # No check finishes: infeasibility is proven by the plan's solve, the conflict is not
    # found. No requirement may be printed as "conflicting".
    monkeypatch.setattr(optimize_explain, "_satisfiable", lambda *a: None)
    code, data = _plan_json(gpusolve, str(reqs), *owned_only())
    assert code == 1
    inf = data["infeasibility"]
    assert inf["timed_out"] and not inf["minimal"] and inf["conflicting"] == []
    assert "ran out of time" in inf["reason"]


def test_a_conflict_not_proven_minimal_says_so(
    gpusolve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reqs = write_reqs(tmp_path, CAPPED_DEADLINE)
    real = optimize_explain._satisfiable

    def whole_set_only(built: Any, enforced: list[str], clock: Any) -> bool | None:
        # The whole set is proven to conflict; every deletion check "times out".
        return real(built, enforced, clock) if len(enforced) == len(built.literals) else None

    monkeypatch.setattr(optimize_explain, "_satisfiable", whole_set_only)
    code, data = _plan_json(gpusolve, str(reqs), *owned_only())
    assert code == 1
    inf = data["infeasibility"]
    assert not inf["minimal"] and inf["timed_out"]
    assert "ran out of time before proving each one necessary" in inf["reason"]
    assert {"capex", "deadline:ft"} <= {c["requirement"] for c in inf["conflicting"]}


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        # The "feasible with 0 racks (-30 more)": a plan within the limit.
        (optimize_explain.Relaxation("racks:s", 30, 0, "least"), "no move of this limit"),
        (optimize_explain.Relaxation("racks:s", 30, None, "unknown"), "within the time limit"),
        (optimize_explain.Relaxation("racks:s", 30, None, "not_enough"), "alone is not enough"),
        (optimize_explain.Relaxation("racks:s", 30, 32, "least"), "32 racks at s (2 more)"),
        (optimize_explain.Relaxation("racks:s", 30, 32, "enough"), "a smaller move may do"),
    ],
)
def test_a_move_is_printed_only_upwards(
    monkeypatch: pytest.MonkeyPatch, found: optimize_explain.Relaxation, expected: str
) -> None:
    monkeypatch.setattr(optimize_explain, "relaxation", lambda *a: found)
    relaxed, reqs = SimpleNamespace(instance=None), SimpleNamespace(currency="CNY")
    said = explain_module._move("racks:s", relaxed, reqs, ONE)  # type: ignore[arg-type]
    assert expected in said and "-" not in said


@pytest.mark.parametrize("seed", range(0, 300, 5))
def test_relaxations_of_a_proven_conflict_move_up(seed: int) -> None:
    """On the reference generator's instances that have no plan (brute force), every
    numeric member of the conflict either cannot help alone or must rise by a positive
    amount (test_optimize_differential checks that amount against the enumeration)."""
    instance = random_instance(seed)
    evaluated = evaluate_all(instance)
    if optimum(instance, evaluated) is not None:
        return
    found = optimize_explain.explain(instance, ONE)
    assert found is not None
    for name in found.conflict:
        moved = optimize_explain.relaxation(instance, name, ONE)
        if moved is None:  # not numeric
            continue
        assert moved.outcome in ("least", "not_enough"), (seed, name)
        if moved.needed is not None:
            assert moved.delta is not None and moved.delta > 0, (seed, name, moved)


# --------------------------------------------------------------------------- honesty


def test_low_headroom_warns_and_illustrative_prices_are_listed(
    gpusolve: Any, tmp_path: Path
) -> None:
    data = yaml.safe_load(FINETUNE.read_text(encoding="utf-8"))
    data["headroom"] = 0.1
    reqs = write_reqs(tmp_path, data)
    code, plan = _plan_json(gpusolve, str(reqs))
    assert code == 0
    [warning] = plan["warnings"]
    assert "10%" in warning and "H29" in warning and "`headroom:`" in warning
    # Exactly the priced items the plan uses whose catalogue price is illustrative.
    catalogue: dict[str, dict[str, Any]] = {}
    for path, kind in ((SERVERS, "servers"), (COLO, "colo_offers"), (CLOUD, "cloud_offers")):
        for item in yaml.safe_load(path.read_text(encoding="utf-8"))[kind]:
            catalogue[item["id"]] = item
    used = [d["server"] or d["cloud_offer"] for d in plan["deployments"]]
    used += [s["offer"] for s in plan["sites"]]
    expected = [i for i in dict.fromkeys(used) if catalogue[i]["pricing"]["illustrative"]]
    listed = [item.split(" ")[1] for item in plan["illustrative_prices"]]
    assert listed == expected and expected
    text = gpusolve("plan", "-q", str(reqs)).out
    assert "Warnings" in text and "below H29's 20%" in text
    assert "Illustrative prices (not quotes" in text
    assert all(f" {i} (as of" in text for i in expected)


def test_default_headroom_does_not_warn(gpusolve: Any) -> None:
    code, plan = _plan_json(gpusolve, str(FINETUNE))
    assert code == 0 and plan["warnings"] == []


# --------------------------------------------------------------------------- frontier, help


def _point(factor: float, proven: bool = True) -> FrontierPoint:
    return FrontierPoint(
        deadline_factor=factor,
        tco=1.0,
        capex=1.0,
        makespan_h=1.0,
        hardware=[],
        proven_optimal=proven,
    )


def test_frontier_status() -> None:
    assert frontier_status([_point(1)], []) == "optimal"
    assert frontier_status([_point(1, proven=False)], []) == "feasible"
    assert frontier_status([_point(1)], [0.5]) == "feasible"
    assert frontier_status([], [0.5]) == "timeout"
    assert frontier_status([], []) == "infeasible"


def test_frontier_out_of_time_exits_3(gpusolve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solve_module, "solve", _out_of_time(None))
    example = str(ROOT / "examples" / "finetune-7b-deadline.yaml")
    result = gpusolve("frontier", "-q", example, "--points", "2", "--format", "json")
    assert result.code == 3
    data = json.loads(result.out)
    assert data["status"] == "timeout" and data["infeasible_factors"] == []
    assert len(data["timed_out_factors"]) == 2


@pytest.mark.parametrize("command", ["plan", "frontier", "colo"])
def test_help_documents_the_timeout_exit_code(gpusolve: Any, command: str) -> None:
    result = gpusolve(command, "--help")
    assert result.code == 0
    assert "Exit codes:" in result.out and "3 no" in result.out
