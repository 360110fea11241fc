"""Smoke test of the benchmark suite: the generator's S scale is well-formed, CP-SAT solves
it to a valid optimum, and (when installed) HiGHS and CBC agree on that optimum."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from generator import describe, generate
from gpusolve.optimize.checks import instance_errors
from gpusolve.optimize.ir import Instance, SolveConfig
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check


@pytest.fixture(scope="module")
def instance() -> Instance:
    generated: Instance = generate("S", 0)
    return generated


def test_generator_is_deterministic(instance: Instance) -> None:
    assert generate("S", 0) == instance
    assert generate("S", 1) != instance


def test_instance_is_well_formed(instance: Instance) -> None:
    assert instance_errors(instance) == []
    size = describe(instance)
    assert (size["workloads"], size["skus"], size["sites"]) == (3, 10, 5)
    assert size["owned_options"] > 0 and size["cloud_options"] > 0
    assert instance.capex_max is not None and instance.monthly_max is not None
    for w in instance.workloads:
        assert any(c.workload == w for c in instance.cloud), f"{w} has no cloud fallback"
    for o in instance.owned:
        sku = instance.skus[o.sku]
        assert o.servers >= 1 and o.placements
        for p in o.placements:
            site = instance.sites[p.site]
            assert site.cooling in sku.cooling and sku.power_w <= site.rack_w
    for sku in instance.skus.values():
        assert 100_000 <= sku.capex <= 3_000_000
        assert 1_000 <= sku.power_w <= 14_000 and 2 <= sku.rack_units <= 10
    for site in instance.sites.values():
        # Contracted rack = what servers may use + the reserve (issue 24: rack margins).
        contracted_w = site.rack_w + site.reserved_w
        assert 4_400 <= contracted_w <= 50_000 and site.rack_units + site.reserved_units == 42
        assert 2 <= site.racks_available <= 40


def test_cpsat_proves_a_valid_optimum(instance: Instance) -> None:
    solution = solve(instance, SolveConfig(time_limit_s=600, work_limit=20, workers=1))
    assert solution.status == "optimal"
    assert solution.objective_value == solution.best_bound
    assert check(instance, solution) == []


def test_peers_agree(instance: Instance) -> None:
    pytest.importorskip("highspy")
    pytest.importorskip("pulp")
    import peers

    optimum = solve(
        instance, SolveConfig(time_limit_s=600, work_limit=20, workers=1)
    ).objective_value
    translation = peers.translate(instance)
    for run in (peers.solve_highs, peers.solve_cbc):
        result = run(translation, 20.0)
        assert result.status == "optimal", result
        assert result.values is not None and result.objective is not None
        assert abs(result.objective - (optimum or 0)) <= 1
        plan = peers.to_solution(translation, result.values, result.status, result.total_s)
        assert check(instance, plan) == []


def test_an_undefined_ratio_is_no_verdict_and_a_measured_one_is_judged() -> None:
    import run

    rows = {
        row["target"]: row["pass"]
        for row in run.targets(
            {
                "M": {"ratio_gpusolve-2w_proof": 0.4, "ratio_gpusolve-2w_wall": 1.2},
                "XL": {"xl_gap_30s_max": 0.02},
                "L": {"highs_proof_s": 60.0},
            },
            {},
        )
    }
    assert rows["M: proof 2w / best peer (median)"] is True
    assert rows["M: solve() 2w / best peer (median)"] is False
    assert rows["M: aim proof 2w / best peer"] is True
    assert rows["XL: proof 2w / best peer (median)"] is None  # peers not run
    assert rows["XL: worst gap with proven bound at 30 s"] is False
    assert rows["L: proof 2w / best peer (median)"] is None  # nothing proven
