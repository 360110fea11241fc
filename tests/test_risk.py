"""`plan --risk N` (analyses/risk.py): the draws, the plan re-priced over them by hand,
the percentiles, and each draw re-planned on the local pool and on a local Ray cluster
with the same figures for the same seed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
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
    # Efficiency: uniform over the 41 whole percents 0.80-1.20 (each about 1/41 of the
    # draws), mean 1.
    percents = np.round(a.card_factors * 100).astype(int).ravel()
    assert np.allclose(a.card_factors.ravel() * 100, percents)
    assert set(percents.tolist()) == set(range(80, 121))
    assert np.bincount(percents - 80).min() > 5000 / 41 / 2
    assert a.card_factors.mean() == pytest.approx(1.0, abs=0.01)


def test_demand_is_drawn_after_prices_and_efficiency_within_its_band() -> None:
    ranges = {"srv": (900.0, 1000.0, 1300.0)}
    plain = risk.draw(5000, 7, ranges, ["card"])
    with_demand = risk.draw(5000, 7, ranges, ["card"], workloads=["chat", "ft"])
    # Drawn last: a seed's prices and efficiencies are those it gives without demand.
    assert np.array_equal(plain.server_factors, with_demand.server_factors)
    assert np.array_equal(plain.card_factors, with_demand.card_factors)
    # Triangular (0.8, 1, 1.2) rounded to whole percents: within the band, mean (0.8 + 1 +
    # 1.2) / 3 = 1; a draw rounds to 0.94 or less when it is below 0.945, and the CDF's left
    # half is (x - 0.8)^2 / (0.2 x 0.4): 0.145^2 / 0.08 = 0.2628 of the draws.
    demand = with_demand.demand_factors
    assert demand.shape == (5000, 2) and with_demand.workloads == ("chat", "ft")
    assert demand.min() >= 0.8 and demand.max() <= 1.2
    assert np.allclose(demand * 100, np.round(demand * 100))
    assert demand.mean() == pytest.approx(1.0, abs=0.01)
    assert (demand[:, 0] <= 0.94).mean() == pytest.approx(0.2628, abs=0.02)
    assert with_demand.demand("nobody").tolist() == [1.0] * 5000


def test_demand_multiplies_tokens_per_second_users_or_runs() -> None:
    from gpusolve.models.requirements import Requirements

    reqs = Requirements.model_validate(
        {
            "horizon_months": 36,
            "workloads": [
                {
                    "name": "chat",
                    "kind": "inference",
                    "model": {"preset": "llama-2-13b"},
                    "concurrency": 32,
                    "target_tokens_per_s": 1500,
                },
                {
                    "name": "bot",
                    "kind": "inference",
                    "model": {"preset": "llama-2-7b"},
                    "concurrency": 10,
                },
                {
                    "name": "ft",
                    "kind": "lora",
                    "model": {"preset": "llama-2-7b"},
                    "lora": {"rank": 16},
                    "tokens": 1e8,
                    "runs": 100,
                    "schedule": "night",
                },
            ],
        }
    )
    # Tokens/s when stated (users kept), users rounded up otherwise, runs for training;
    # the night slot holds 730 / 2 x 36 = 13,140 h.
    needs = {n.workload: n for n in risk.needs(reqs)}
    assert (needs["chat"].unit, needs["chat"].figure) == ("tokens/s", 1500)
    assert (needs["bot"].unit, needs["bot"].figure) == ("users", 10)
    assert (needs["ft"].unit, needs["ft"].figure, needs["ft"].slot_hours) == ("runs", 100, 13140)
    grown = {
        w.name: w for w in risk.with_demand(reqs, {"chat": 1.1, "bot": 1.15, "ft": 0.9}).workloads
    }
    assert grown["chat"].target_tokens_per_s == pytest.approx(1650)  # type: ignore[union-attr]
    assert grown["chat"].concurrency == 32  # type: ignore[union-attr]
    assert grown["bot"].concurrency == 12  # type: ignore[union-attr]  # ceil(11.5)
    assert grown["ft"].runs == pytest.approx(90)


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


def test_a_financed_servers_interest_moves_with_its_drawn_price() -> None:
    # Down payment, instalments and buy-out are shares of the price, so the interest is
    # too: 10% dearer, the server's 1,000 and its 80 of interest are 1,100 and 88.
    items = [
        CostItem(kind="servers_capex", subject="srv", detail="1 x srv", amount=1000),
        CostItem(kind="financing", subject="srv", detail="1 x srv by lease", amount=80),
        CostItem(kind="rack_rent", subject="s", detail="x", amount=300),
    ]
    draws = risk.Draws(
        seed=0,
        servers=("srv",),
        server_factors=np.array([[1.1], [0.9]]),
        cards=(),
        card_factors=np.zeros((2, 0)),
    )
    # 1,100 + 88 + 300 = 1,488; 900 + 72 + 300 = 1,272.
    assert risk.reprice(plan_of(items, []), draws).tolist() == pytest.approx([1488, 1272])


def served(workload: str, card: str, spare: float, unit: str) -> Deployment:
    d = deployment("cloud", card, None)
    return d.model_copy(update={"workload": workload, "spare": spare, "target_unit": unit})


def test_demand_moves_training_hours_and_holds_a_service_rental() -> None:
    items = [
        CostItem(
            kind="cloud_rental", subject="cloud-a", detail="ft: x", amount=500, unit="instance-hour"
        ),
        CostItem(
            kind="cloud_rental",
            subject="cloud-a",
            detail="chat: x",
            amount=400,
            unit="instance-hour",
        ),
    ]
    owned = deployment("owned", "card", 10).model_copy(update={"workload": "lt", "run_cost": 2})
    ft = deployment("cloud", "card", 100)
    plan = plan_of(items, [ft, served("chat", "card", 0.2, "tokens/s"), owned])
    draws = risk.Draws(
        seed=0,
        servers=(),
        server_factors=np.ones((1, 0)),
        cards=("card",),
        card_factors=np.array([[0.8]]),
        workloads=("chat", "ft", "lt"),
        demand_factors=np.array([[1.3, 1.1, 1.1]]),
    )
    # ft's rental: 500 x 1.1 / 0.8 = 687.5. chat's rental runs every hour of its slot
    # whatever the draw: 400. lt's 100 owned runs at 2 of energy each: 200 x (1.1 / 0.8 -
    # 1) = 75 more. 900 + 187.5 + 75 = 1,162.5.
    assert risk.reprice(plan, draws, {"lt": 100}).tolist() == pytest.approx([1162.5])


def test_a_draw_whose_demand_the_plan_cannot_meet_is_a_shortfall() -> None:
    plan = plan_of(
        [],
        [
            served("chat", "fast", 0.2, "tokens/s"),
            served("bot", "fast", 0.25, "users"),
            deployment("owned", "slow", 10).model_copy(update={"workload": "ft"}),
        ],
    )
    draws = risk.Draws(
        seed=0,
        servers=(),
        server_factors=np.ones((3, 0)),
        cards=("fast", "slow"),
        card_factors=np.array([[0.9, 0.9], [1.0, 1.0], [0.9, 1.0]]),
        workloads=("bot", "chat", "ft"),
        demand_factors=np.array([[1.3, 1.1, 1.2], [1.2, 1.1, 1.2], [1.0, 1.0, 1.0]]),
    )
    wanted = [
        risk.Need("chat", "tokens/s", 1500),
        risk.Need("bot", "users", 10),
        risk.Need("ft", "runs", 1000, 13140),
    ]
    lacking = risk.short(plan, draws, wanted)
    # chat delivers 1.2 x the target times its card's efficiency: 1.08 < 1.1 short; 1.2 >=
    # 1.1 met; 1.08 >= 1.0 met.
    assert lacking["chat"].tolist() == [True, False, False]
    # bot holds 1.25 x its users whatever the efficiency: 1.3 short, 1.2 and 1.0 met.
    assert lacking["bot"].tolist() == [True, False, False]
    # ft: 1,000 x 1.2 runs x 10 h / 0.9 = 13,333 h > 13,140 h short; / 1.0 = 12,000 h met;
    # 10,000 h met.
    assert lacking["ft"].tolist() == [True, False, False]
    found = risk.summary(np.array([1.0, 2.0, 3.0]), draws, 0.0, "test", lacking, wanted)
    assert found.shortfall == pytest.approx(1 / 3, abs=1e-4)
    assert found.shortfall_by_workload == {"chat": 0.3333, "bot": 0.3333, "ft": 0.3333}
    assert any(
        d.startswith("demand of ft: runs triangular within +-20%") for d in found.distributions
    )


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
    # Demand is drawn for both workloads; the shortfall is a share of the draws.
    assert any(d.startswith("demand of chat-13b: tokens/s ") for d in r["distributions"])
    assert any(d.startswith("demand of lora-7b: runs ") for d in r["distributions"])
    assert set(r["shortfall_by_workload"]) == {"chat-13b", "lora-7b"}
    assert max(r["shortfall_by_workload"].values()) <= r["shortfall"] <= 1
    assert "falls short of the drawn demand in " in out


def test_replan_needs_risk(gpusolve: Any) -> None:
    result = gpusolve("plan", "-q", str(CHAT), "--replan")
    assert result.code == 2 and "--risk" in result.err


@pytest.fixture(scope="module")
def solved_chat() -> Any:
    """The chat example solved once for the module's cluster tests (they only read it)."""
    from gpusolve.load.data import data_dir
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan import make_plan
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.solved import PlanOptions

    run = prepare_run(CHAT, (data_dir("catalog"),), ())
    config = SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1)
    return make_plan(run, PlanOptions(config=config))


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray cluster (2 CPUs) the module's tests share, started by the test itself,
    its workers importing this checkout; skipped only when the optional extra `ray` is not
    installed. Its workers run at the test's priority: Ray starts them at nice 15 (its
    `worker_niceness`), which beside other CPU-bound processes left them a few percent of a
    core (the re-planning test crawled for over ten minutes beside two busy loops)."""
    ray = pytest.importorskip("ray", reason="the optional extra `ray` is not installed")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_worker_niceness", "0")
        path = os.pathsep.join(p for p in (str(ROOT / "solver"), os.environ.get("PYTHONPATH")) if p)
        ray.init(
            num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}}
        )
        yield ray
        ray.shutdown()


def files() -> Any:
    from gpusolve.analyses.cluster import Files
    from gpusolve.load.data import data_dir

    return Files(CHAT, (data_dir("catalog"),), ())


def test_replanning_gives_the_same_figures_on_the_pool_and_on_a_local_ray_cluster(
    local_ray: Any, solved_chat: Any
) -> None:
    from gpusolve.analyses.cluster import Cluster

    # Every draw is planned on both the pool and Ray. 50 draws (a finance lead runs 200):
    # with seed 3 three different plans win 22, 15 and 13 of them, so the draws move the plan
    # as they do at 200, in a quarter of the suite's time (78 s on the loaded 2-core box).
    draws = 50
    solved = solved_chat
    pooled = risk.run(solved, risk.RiskRequest(draws=draws, seed=3, replan=True, workers=2)).risk
    on_ray = risk.RiskRequest(draws=draws, seed=3, replan=True, cluster=Cluster("auto", files()))
    clustered = risk.run(solved, on_ray).risk
    assert pooled is not None and clustered is not None
    assert pooled.ran_on.startswith("local process pool")
    assert clustered.ran_on == "Ray cluster at auto"
    assert pooled == clustered.model_copy(update={"ran_on": pooled.ran_on})
    assert sum(p.draws for p in pooled.replanned) == draws
    # The draws move the plan: more than one plan is the cheapest in some draw.
    assert len(pooled.replanned) > 1


def test_the_sensitivity_sweep_gives_the_same_ranges_on_a_local_ray_cluster(
    local_ray: Any, solved_chat: Any
) -> None:
    from gpusolve.analyses import sensitivity
    from gpusolve.analyses.cluster import Cluster

    solved = solved_chat
    pooled = sensitivity.run(solved, bar=False, workers=2, bounded=True)
    ranged = sensitivity.run(solved, bar=False, bounded=True, cluster=Cluster("auto", files()))
    assert isinstance(pooled, Plan) and isinstance(ranged, Plan)
    assert pooled.sensitivity is not None and ranged.sensitivity is not None
    assert pooled.sensitivity.ranges and pooled.sensitivity.ranges == ranged.sensitivity.ranges


def test_a_hedged_plans_ranges_are_the_same_on_a_local_ray_cluster(
    local_ray: Any, tmp_path: Any
) -> None:
    # The workers rebuild each scenario's inputs from the files (`cluster.py`): the price
    # ranges of a two-scenario fine-tune (the runs double in one) come out as the pool's.
    from gpusolve.analyses.cluster import Cluster, Files
    from gpusolve.analyses.sensitivity import analyse_hedged, plan_purchase
    from gpusolve.candidates.scaling import CandidateInputs
    from gpusolve.load.data import data_dir
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan import make_plan
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.solved import Hedged, PlanOptions

    tune = (ROOT / "examples" / "finetune-7b-deadline.yaml").read_text(encoding="utf-8")
    path = tmp_path / "hedged.yaml"
    path.write_text(
        tune + "scenarios:\n  - name: nominal\n    probability: 0.6\n"
        "  - name: growth\n    probability: 0.4\n    demand: {ft-7b: 2}\n",
        encoding="utf-8",
    )
    run = prepare_run(path, (data_dir("catalog"),), ())
    config = SolveConfig(time_limit_s=600, work_limit=10, workers=1, seed=1)
    solved = make_plan(run, PlanOptions(config=config))
    assert isinstance(solved.solution, Hedged)
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    purchase = plan_purchase(solved.single_plan)
    args = (solved.solution, inputs, config, 2, purchase)
    pooled = analyse_hedged(*args, efficiency=False)
    cluster = Cluster("auto", Files(path, (data_dir("catalog"),), ()))
    on_ray = analyse_hedged(*args, efficiency=False, cluster=cluster)
    assert pooled.ranges and pooled.ranges == on_ray.ranges


def test_the_frontier_gives_the_same_points_here_on_the_pool_and_on_a_local_ray_cluster(
    local_ray: Any,
) -> None:
    # The deadlines as written, then two looser factors (x 1.5, x 2): the looser points are
    # the tasks that travel; each finds a plan, the same one wherever it runs.
    from gpusolve.analyses.cluster import Cluster, Files
    from gpusolve.analyses.frontier import PointTask, Sweep, looser_points, sweep
    from gpusolve.candidates.scaling import CandidateInputs
    from gpusolve.load.data import data_dir
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan.inputs import prepare_run

    tune = ROOT / "examples" / "finetune-7b-deadline.yaml"
    run = prepare_run(tune, (data_dir("catalog"),), ())
    config = SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1)
    ray_cluster = Cluster("auto", Files(tune, (data_dir("catalog"),), ()))
    tasks = [PointTask(1.5, config), PointTask(2.0, config)]
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    here = looser_points(tasks, inputs, 1, None)
    assert all(point is not None and status == "found" for point, status in here)
    assert [p.deadline_factor for p, _ in here if p is not None] == [1.5, 2.0]
    assert looser_points(tasks, inputs, 2, None) == here
    assert looser_points(tasks, inputs, 2, ray_cluster) == here
    how = Sweep(high=2.0, looser=2, max_points=3)
    args = (run.reqs, run.catalog, run.policies, config, how)
    assert sweep(*args, workers=1) == sweep(*args, cluster=ray_cluster)


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
    shortfall = re.search(r'id="risk-shortfall">([\d.]+%)<', html)
    assert shortfall is not None and shortfall[1] == f"{data['shortfall']:.1%}"


def test_a_cluster_without_ray_installed_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from gpusolve.analyses.cluster import on_ray
    from gpusolve.errors import InputError

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    with pytest.raises(InputError, match=r"gpusolve\[ray\]"):
        on_ray([], files(), "local")
