"""Mixed capacity: a service split between owned servers at base load and a rented burst
for the rest (`candidates/burst.py`), in a single plan and in a schedule. Hand-built
instances with the arithmetic in the comments, and the shipped example whose owned A800s
cannot carry the whole chat service.

The world (tests/factories/instances.py): server h100 at 1,000 (10 kW, 8 U, two per 20 kW
rack), site sz of 20 kW racks at 5 a month, energy 10 per server-month."""

from __future__ import annotations

import dataclasses
import json

from tests.factories.instances import ONE, instance, owned, rented
from tests.support.shipped import ROOT

from gpusolve.candidates.burst import with_bursts
from gpusolve.models.periods import split_horizon
from gpusolve.optimize.ir import Instance, Stock
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.optimize.phased.solve import solve_phased
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check


def _split(stock: int = 0, burst: int = 700, whole_rent: int = 1500) -> Instance:
    """w needs 4 h100 or a 1,500 rental; 2 h100 carry half of it beside a rental for the
    other half (700, or 900 at the dearer offer)."""
    return with_bursts(
        instance(
            ("w",),
            (
                owned("w|own4", "w", 4),
                owned("w|base50", "w", 2, share_permille=500, throughput=50),
            ),
            cloud=(rented("w|rent", "w", 4, whole_rent),),
            bursts=(
                rented("w|b50", "w", 2, burst, share_permille=500, throughput=60),
                rented("w|b50dear", "w", 2, burst + 200, offer="dear", share_permille=500),
                rented("w|b25", "w", 1, 100, share_permille=250),
            ),
            stock=(Stock("h100", "sz", stock),) if stock else (),
        )
    )


def test_a_base_is_paired_with_the_cheapest_burst_for_the_rest() -> None:
    inst = _split()
    base = next(o for o in inst.owned if o.key == "w|base50")
    # Of the two rentals for the other 50%, the cheaper (700); the 25% one is for another
    # base. Its throughput is the base's and the burst's together.
    assert base.burst is not None and base.burst.key == "w|b50"
    assert base.rent == 700 and base.throughput == 50 + 60
    # A base with no burst for its rest is no option at all.
    alone = dataclasses.replace(inst, bursts=())
    assert [o.key for o in with_bursts(alone).owned] == ["w|own4"]


def test_an_owned_base_plus_a_rented_burst_beats_all_rent() -> None:
    # Two h100 already owned at sz. Over 12 months:
    #   all-rent: 1,500;
    #   4 h100 (2 owned, 2 bought): 2,000 + 2 racks x 5 x 12 + 4 x 10 x 12 = 2,600;
    #   the 2 owned at base load: 1 rack x 60 + 2 x 120 energy + the burst 700 = 1,000.
    solution = solve(_split(stock=2), ONE)
    assert [c.option for c in solution.choices] == ["w|base50"]
    assert solution.costs is not None and solution.costs.tco == 1_000
    assert solution.costs.cloud == 700
    assert check(_split(stock=2), solution) == []


def test_a_dear_burst_is_not_taken() -> None:
    # The burst at 1,500 makes the split 1,800, above renting it all (1,500).
    solution = solve(_split(stock=2, burst=1_500), ONE)
    assert [c.option for c in solution.choices] == ["w|rent"]


def test_a_fiscal_year_budget_that_buys_half_buys_it_and_rents_the_rest() -> None:
    # Two 12-month periods, one per fiscal year; w needs 2 h100 (1,000 each), or one h100
    # at base load and a rental for the other half (1,500 a year), or a rental for all of
    # it (3,000 a year). The first year's capex budget is 1,000: one server.
    #   split in P0, both owned in P1: 1,000 + a rack over 24 months (120) + energy 120
    #     + 1,500; then 1,000 + energy 240: 3,980;
    #   rent all in P0, buy both in P1: 3,000 + 2,000 + a rack for 12 months (60) + 240:
    #     5,300 (the best plan without the split);
    #   split in both: 1,000 + 120 + 120 + 1,500 + 120 + 1,500 = 4,360.
    periods = split_horizon(24, 12)
    insts = tuple(
        with_bursts(
            instance(
                ("w",),
                (
                    owned(f"w|own|{p.index}", "w", 2),
                    owned(f"w|base|{p.index}", "w", 1, share_permille=500),
                ),
                cloud=(rented(f"w|rent|{p.index}", "w", 2, 3_000),),
                bursts=(rented(f"w|half|{p.index}", "w", 1, 1_500, share_permille=500),),
                horizon_months=p.months,
            )
        )
        for p in periods
    )
    pi = PhasedInstance(
        periods, insts, {"h100": (1000, 1000)}, {"h100": (0, 1)}, 24, capex_by_year=(1_000,)
    )
    s = solve_phased(pi, ONE)
    assert s.status == "optimal" and s.tco == 3_980
    first, second = s.periods
    assert first.bought == {("h100", "sz"): 1}
    assert [c.option for c in first.choices] == ["w|base|0"]
    assert [(b.option, b.cost, b.share_permille) for b in first.bursts] == [
        ("w|half|0", 1_500, 500)
    ]
    assert [c.option for c in second.choices] == ["w|own|1"] and second.bursts == ()
    # Without the split the schedule rents it all in the first year.
    unsplit = tuple(dataclasses.replace(i, bursts=()) for i in insts)
    assert (
        solve_phased(
            dataclasses.replace(pi, instances=tuple(with_bursts(i) for i in unsplit)), ONE
        ).tco
        == 5_300
    )


def _plan(gpusolve, tmp_path, extra: str = "") -> dict:
    text = (ROOT / "examples" / "owned-a800-what-to-add.yaml").read_text(encoding="utf-8")
    path = tmp_path / "fleet.yaml"
    path.write_text(
        text.replace("  - name: chat-70b\n", "  - name: chat-70b\n" + extra), encoding="utf-8"
    )
    result = gpusolve("plan", "-q", str(path), "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_the_owned_a800s_carry_the_base_and_a_rental_the_rest(gpusolve, tmp_path) -> None:
    # The team owns 4 HGX A800 (8 GPUs each) and may buy no more; the chat service needs
    # more than they hold at its target plus the 20% margin.
    plan = _plan(gpusolve, tmp_path)
    chat = [d for d in plan["deployments"] if d["workload"] == "chat-70b"]
    assert [d["mode"] for d in chat] == ["owned", "cloud"]
    base, burst = chat
    assert base["server"] == "hgx-a800-8gpu" and base["servers"] == 4
    assert abs(base["share"] + burst["share"] - 1) < 1e-9
    assert base["split"].startswith("base load") and burst["split"].startswith("burst")
    # Each part meets its share of the target plus the margin; the two together the whole.
    target = base["target"] / base["share"]
    for d in chat:
        assert d["throughput"] >= d["share"] * target * (1 + d["margin"]) - 1
    rent = [i for i in plan["cost"]["breakdown"]["items"] if i["subject"] == burst["cloud_offer"]]
    assert rent and "burst" in rent[0]["detail"]
    # Kept on one platform (`split: false`), the same service costs more.
    whole = _plan(gpusolve, tmp_path, "    split: false\n")
    assert len([d for d in whole["deployments"] if d["workload"] == "chat-70b"]) == 1
    assert whole["cost"]["tco"] > plan["cost"]["tco"]


def test_a_split_service_launches_each_part_from_its_own_folder(gpusolve, tmp_path) -> None:
    out = tmp_path / "launch"
    path = ROOT / "examples" / "owned-a800-what-to-add.yaml"
    result = gpusolve("plan", "-q", str(path), "--launch", str(out))
    assert result.code == 0, result.err
    assert (out / "chat-70b" / "base" / "vllm.sh").is_file()
    assert (out / "chat-70b" / "burst" / "vllm.sh").is_file()
    # The burst's benchmark sends its share of the traffic, not the whole service's.
    bench = (out / "chat-70b" / "burst" / "bench.sh").read_text(encoding="utf-8")
    base = (out / "chat-70b" / "base" / "bench.sh").read_text(encoding="utf-8")
    assert bench != base


def test_owned_servers_run_the_runs_the_horizon_holds_and_a_rental_the_rest(tmp_path) -> None:
    # 30 fine-tunes of the shipped 7B example in a one-month horizon (730.5 h): on one H20
    # server a run takes ~47 h, so all 30 (~1,400 h) do not fit and that option is
    # dropped; half of them, 15 runs (~700 h), do: the base keeps 15 runs on the server,
    # paired with a rental sized for the other 15.
    from gpusolve.candidates.prepare import prepare
    from gpusolve.plan.inputs import prepare_run

    text = (ROOT / "examples" / "finetune-7b-deadline.yaml").read_text(encoding="utf-8")
    text = text.replace("horizon_months: 24", "horizon_months: 1").replace("runs: 24", "runs: 30")
    path = tmp_path / "many-runs.yaml"
    path.write_text(text, encoding="utf-8")
    run = prepare_run(path, [], [])
    cand = prepare(run.reqs, run.catalog, run.policies).cand
    one = [o for o in cand.instance.owned if o.sku == "hgx-h20-8gpu" and o.servers == 1]
    assert one and all(o.share_permille == 500 for o in one)
    base = one[0]
    hours = cand.meta[base.key].estimate.time_to_train_s / 3600
    assert 30 * hours > 730.5 >= 15 * hours
    assert cand.meta[base.key].share == 15 / 30
    assert base.burst is not None and base.burst.share_permille == 500
    assert cand.meta[base.burst.key].share == 15 / 30


def test_a_cheaper_server_model_with_a_burst_does_not_dominate_one_without() -> None:
    # "cheap" (900) serves w only as a base beside a 1,000 burst; h100 (1,000) serves it
    # whole. Over 12 months the h100 alone costs 1,000 + 60 rack + 120 energy = 1,180; the
    # cheap base costs 900 + 60 + 120 + 1,000 = 2,080. Cheaper servers do not make the
    # h100's option redundant while the burst's rent is on top.
    from tests.factories.instances import H100, site, sku

    from gpusolve.optimize.dominance import dominated_skus

    inst = with_bursts(
        instance(
            ("w",),
            (owned("w|h100", "w", 1), owned("w|base", "w", 1, sku="cheap", share_permille=500)),
            bursts=(rented("w|half", "w", 1, 1_000, share_permille=500),),
            skus=(H100, sku("cheap", 900, 10_000, 8)),
            sites=(site(energy={"h100": 10, "cheap": 10}),),
        )
    )
    assert dominated_skus(inst, inst.owned) == frozenset()
    solution = solve(inst, ONE)
    assert [c.option for c in solution.choices] == ["w|h100"]
    assert solution.costs is not None and solution.costs.tco == 1_180
