"""`plan --risk N` (analyses/risk.py): the draws, the plan re-priced over them by hand,
the percentiles, and each draw re-planned on the local pool and on a local Ray cluster
with the same figures for the same seed."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest
from tests.support.shipped import ROOT

from gpusolve.analyses import risk
from gpusolve.models.plan import (
    Cost,
    CostBreakdown,
    CostItem,
    Deployment,
    Parallel,
    Plan,
    SolverInfo,
)

CHAT = ROOT / "examples" / "chat-day-lora-night.yaml"


def test_a_seed_gives_the_same_draws_and_each_stays_in_its_range() -> None:
    ranges = {"srv": (900.0, 1000.0, 1300.0)}
    a = risk.draw(5000, 7, ranges, ["card"])
    b = risk.draw(5000, 7, ranges, ["card"])
    assert np.array_equal(a.server_factors, b.server_factors)
    assert np.array_equal(a.card_factors, b.card_factors)
    assert not np.array_equal(a.server_factors, risk.draw(5000, 8, ranges, ["card"]).server_factors)
    # Triangular (900, 1000, 1300) as a factor of 1,000: within 0.9-1.3, mean (900 + 1000 +
    # 1300) / 3 / 1000 = 1.0667.
    prices = a.server_factors[:, 0]
    assert prices.min() >= 0.9 and prices.max() <= 1.3
    assert prices.mean() == pytest.approx(3200 / 3 / 1000, abs=0.01)
    # Efficiency: uniform in 0.8-1.2, mean 1.
    assert a.card_factors.min() >= 0.8 and a.card_factors.max() <= 1.2
    assert a.card_factors.mean() == pytest.approx(1.0, abs=0.01)


def deployment(mode: str, card: str, hours: float | None) -> Deployment:
    parallel = Parallel(
        tp=1, pp=1, dp=8, zero_stage=1, gradient_checkpointing="none", micro_batch=1, grad_accum=1
    )
    return Deployment(
        workload="ft",
        mode=mode,  # type: ignore[arg-type]
        card=card,
        server=None if mode == "cloud" else "srv",
        cloud_offer="cloud-a" if mode == "cloud" else None,
        servers=1,
        gpus=8,
        parallel=parallel,
        site=None,
        schedule="always",
        memory_per_gpu_gb=1,
        card_memory_gb=80,
        usable_memory_gb=64,
        headroom=0.2,
        time_to_train_h=hours,
        throughput=1,
    )


def plan_of(items: list[CostItem], deployments: list[Deployment]) -> Plan:
    cost = Cost(
        capex=0,
        monthly_opex=0,
        tco=sum(i.amount for i in items),
        currency="CNY",
        horizon_months=12,
        breakdown=CostBreakdown(items=items),
    )
    solver = SolverInfo(status="optimal", workers=1, seed=1)
    return Plan(
        status="optimal", objective="min-tco", cost=cost, solver=solver, deployments=deployments
    )


def test_repricing_scales_server_lines_by_price_and_hourly_rentals_by_one_over_efficiency() -> None:
    items = [
        CostItem(kind="servers_capex", subject="srv", detail="1 x srv", amount=1000),
        CostItem(
            kind="cloud_rental", subject="cloud-a", detail="ft: x", amount=500, unit="instance-hour"
        ),
        CostItem(kind="rack_rent", subject="s", detail="x", amount=300),
    ]
    plan = plan_of(items, [deployment("cloud", "card", 100)])
    draws = risk.Draws(
        seed=0,
        servers=("srv",),
        server_factors=np.array([[1.1], [1.0]]),
        cards=("card",),
        card_factors=np.array([[0.8], [1.25]]),
    )
    # Draw 1: 1,000 x 1.1 + 500 / 0.8 + 300 = 1,100 + 625 + 300 = 2,025.
    # Draw 2: 1,000 + 500 / 1.25 + 300 = 1,000 + 400 + 300 = 1,700. Racks held.
    assert risk.reprice(plan, draws).tolist() == pytest.approx([2025, 1700])
    # A 100 h run with a 110 h deadline: at 0.8 it takes 125 h (missed), at 1.25 80 h.
    assert risk.missed(plan, draws, {"ft": 110}).tolist() == [True, False]


def test_percentiles_interpolate_between_order_statistics() -> None:
    draws = risk.draw(10, 1, {}, [])
    # 1..10: P10 at rank 0.9 between 1 and 2 = 1.9; P50 5.5; P90 9.1.
    found = risk.summary(np.arange(1.0, 11.0), draws, 0.0, "test")
    assert (found.p10, found.p50, found.p90, found.mean) == (1.9, 5.5, 9.1, 5.5)
    assert sum(b.draws for b in found.histogram) == 10


def test_plan_risk_prints_the_percentiles_and_the_json_carries_them(gpusolve: Any) -> None:
    out = gpusolve("plan", "-q", str(CHAT), "--risk", "1000").out
    assert "TCO of this plan over 1,000 draws (seed 1): P10 " in out and " P90 " in out
    data = json.loads(gpusolve("plan", "-q", str(CHAT), "--risk", "1000", "--format", "json").out)
    r = data["risk"]
    assert r["draws"] == 1000 and r["p10"] <= r["p50"] <= r["p90"]
    assert sum(b["draws"] for b in r["histogram"]) == 1000
    # The chat example's H20 server has a 1.1-1.3M price range: the P10-P90 spread is
    # within what that range and the hourly rentals can move.
    assert any("hgx-h20-8gpu" in d for d in r["distributions"])


def test_replan_needs_risk(gpusolve: Any) -> None:
    result = gpusolve("plan", "-q", str(CHAT), "--replan")
    assert result.code == 2 and "--risk" in result.err


def solved_chat() -> Any:
    from gpusolve.load.data import data_dir
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan import make_plan
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.solved import PlanOptions

    run = prepare_run(CHAT, (data_dir("catalog"),), ())
    config = SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1)
    return make_plan(run, PlanOptions(config=config))


@pytest.fixture
def local_ray() -> Any:
    """A local Ray cluster (2 CPUs) the test starts itself, its workers importing this
    checkout; skipped only when the optional extra `ray` is not installed."""
    ray = pytest.importorskip("ray", reason="the optional extra `ray` is not installed")
    path = os.pathsep.join(p for p in (str(ROOT / "solver"), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


def files() -> Any:
    from gpusolve.analyses.cluster import Files
    from gpusolve.load.data import data_dir

    return Files(CHAT, (data_dir("catalog"),), ())


def test_replanning_gives_the_same_figures_on_the_pool_and_on_a_local_ray_cluster(
    local_ray: Any,
) -> None:
    from gpusolve.analyses.cluster import Cluster

    solved = solved_chat()
    pooled = risk.run(solved, risk.RiskRequest(draws=6, seed=3, replan=True, workers=2)).risk
    on_ray = risk.RiskRequest(draws=6, seed=3, replan=True, cluster=Cluster("auto", files()))
    clustered = risk.run(solved, on_ray).risk
    assert pooled is not None and clustered is not None
    assert pooled.ran_on.startswith("local process pool")
    assert clustered.ran_on == "Ray cluster at auto"
    assert pooled.replanned == clustered.replanned
    assert (pooled.p10, pooled.p50, pooled.p90) == (clustered.p10, clustered.p50, clustered.p90)
    assert sum(p.draws for p in pooled.replanned) == 6


def test_the_sensitivity_sweep_gives_the_same_ranges_on_a_local_ray_cluster(
    local_ray: Any,
) -> None:
    from gpusolve.analyses import sensitivity
    from gpusolve.analyses.cluster import Cluster

    solved = solved_chat()
    pooled = sensitivity.run(solved, bar=False, workers=2, bounded=True)
    ranged = sensitivity.run(solved, bar=False, bounded=True, cluster=Cluster("auto", files()))
    assert isinstance(pooled, Plan) and isinstance(ranged, Plan)
    assert pooled.sensitivity is not None and ranged.sensitivity is not None
    assert pooled.sensitivity.ranges and pooled.sensitivity.ranges == ranged.sensitivity.ranges


def test_the_html_report_shows_the_risk_figures_of_the_json(gpusolve: Any, tmp_path: Any) -> None:
    import re

    page = tmp_path / "risk.html"
    args = ("plan", "-q", str(CHAT), "--risk", "300", "--no-sensitivity")
    data = json.loads(gpusolve(*args, "--format", "json").out)["risk"]
    assert gpusolve(*args, "--format", "html", "-o", str(page)).code == 0
    html = page.read_text(encoding="utf-8")
    for name in ("p10", "p50", "p90"):
        shown = re.search(rf'id="risk-{name}">([\d,]+)<', html)
        assert shown is not None and shown[1] == f"{data[name]:,.0f}", name
    counts = re.findall(r'<td class="num">(\d+)</td><td><span class="swatch', html)
    assert [int(c) for c in counts] == [b["draws"] for b in data["histogram"]]


def test_a_cluster_without_ray_installed_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from gpusolve.analyses.cluster import on_ray
    from gpusolve.errors import InputError

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    with pytest.raises(InputError, match=r"gpusolve\[ray\]"):
        on_ray([], files(), "local")
