"""`plan --sensitivity`: the bisection, the scaling, the acceptance test on a small instance
(just inside each reported end the plan is the same, just beyond it differs) and the CLI."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.factories import instances as factory
from tests.support.phased import CHAT_NORTH
from tests.support.shipped import ROOT

from gpusolve.analyses.probing import (
    NO_PLAN,
    REL_TOL,
    Parameter,
    Probe,
    describe,
    find_edge,
    plan_key,
    to_range,
)
from gpusolve.analyses.sensitivity import Task, analyse_one, probe_solve
from gpusolve.candidates.scaling import CandidateInputs, scale_instance
from gpusolve.optimize.ir import (
    Instance,
    Placement,
    SolveConfig,
)

CONFIG = SolveConfig(time_limit_s=600, work_limit=10, workers=1, seed=1)


# --------------------------------------------------------------------------- bisection


def fake(switches: dict[str, tuple[float, float]]) -> tuple[list[float], object]:
    """A solve function whose plan is "base" for factors in [lo, hi], "below"/"above"
    outside: records every factor it is asked about."""
    lo, hi = switches["base"]
    asked: list[float] = []

    def solve_at(factor: float) -> Probe:
        asked.append(factor)
        key = (
            (("base",),) if lo <= factor <= hi else (("below",),) if factor < lo else (("above",),)
        )
        return Probe(factor, key, key[0][0], None)

    return asked, solve_at


@pytest.mark.parametrize("hi", [1.05, 1.7, 3.3, 9.99])
def test_find_edge_upwards_brackets_the_switch_within_the_tolerance(hi: float) -> None:
    asked, solve_at = fake({"base": (0.0, hi)})
    edge, solves = find_edge(solve_at, (("base",),), 10.0)  # type: ignore[arg-type]
    assert edge.outside is not None and edge.outside.key == (("above",),)
    assert edge.inside <= hi < edge.outside.factor
    assert edge.outside.factor / edge.inside - 1 <= REL_TOL
    assert solves == len(asked)
    assert solves <= 4 + math.ceil(math.log2(math.log(2) / math.log(1 + REL_TOL))) + 1


@pytest.mark.parametrize("lo", [0.11, 0.5, 0.93])
def test_find_edge_downwards(lo: float) -> None:
    _, solve_at = fake({"base": (lo, 100.0)})
    edge, _ = find_edge(solve_at, (("base",),), 0.1)  # type: ignore[arg-type]
    assert edge.outside is not None and edge.outside.key == (("below",),)
    assert edge.outside.factor < lo <= edge.inside
    assert edge.inside / edge.outside.factor - 1 <= REL_TOL


def test_find_edge_without_a_switch_reaches_the_limit_and_stops() -> None:
    asked, solve_at = fake({"base": (0.0, 100.0)})
    edge, solves = find_edge(solve_at, (("base",),), 10.0)  # type: ignore[arg-type]
    assert edge.outside is None and edge.inside == 10.0
    assert asked == [2.0, 4.0, 8.0, 10.0] and solves == 4


# --------------------------------------------------------------------------- a small instance

# One workload, own or rent. Owning: 1 server of 1000 + 12 months x (energy 10 + rent 5)
# = 1180; renting: 1500 over the horizon. The plan owns; it rents once the server costs
# more than 1500 - 180 = 1320 (x1.32), or the rental less than 1180 (x0.787), or the rack
# rent more than (1500 - 1120) / 12 = 31.7 a month (x6.33).
SKU = factory.sku("srv", capex=1000, power_w=10_000, rack_units=8)
SITE = factory.site("dc", energy={"srv": 10})
OWN = factory.owned("w|own", "w", 1, sku="srv", sites=("dc",))
RENT = factory.rented("w|rent", "w", 1, cost_total=1500, offer="cloud-x", region="east")
SMALL = factory.instance(("w",), (OWN,), (RENT,), sites=(SITE,), skus=(SKU,))
PARAMS = [
    Parameter("server_price", "srv", "price of srv", "CNY/server", 1000.0),
    Parameter("cloud_price", "cloud-x", "price of cloud-x", "CNY/instance-hour", 1500.0),
    Parameter("rack_rent", "dc", "rack rent at dc", "CNY/rack-month", 5.0),
    Parameter("power_price", "dc", "power price at dc", "CNY/kWh", 10.0),
]


def test_scale_instance_moves_one_coefficient_only() -> None:
    assert scale_instance(SMALL, "server_price", "srv", 2).skus["srv"].capex == 2000
    assert scale_instance(SMALL, "cloud_price", "cloud-x", 0.5).cloud[0].cost_total == 750
    assert scale_instance(SMALL, "rack_rent", "dc", 3).sites["dc"].rack_rent_month == 15
    assert scale_instance(SMALL, "power_price", "dc", 0.5).sites["dc"].energy_month == {"srv": 5}
    same = scale_instance(SMALL, "server_price", "srv", 2)
    assert same.sites == SMALL.sites and same.cloud == SMALL.cloud


def test_every_coefficient_proportional_to_a_price_moves_with_it() -> None:
    """A server's residual value is a share of its price; energy above idle is paid at the
    site's power price; bandwidth beyond the included line at its bandwidth price."""
    sku = dataclasses.replace(SKU, residual=400)
    site = dataclasses.replace(SITE, bandwidth_month=50, extra_mbps_cost=7)
    busy = dataclasses.replace(OWN, placements=(Placement("dc", busy_energy=30),))
    inst = dataclasses.replace(SMALL, skus={"srv": sku}, sites={"dc": site}, owned=(busy,))
    priced = scale_instance(inst, "server_price", "srv", 0.5).skus["srv"]
    assert (priced.capex, priced.residual) == (500, 200)
    power = scale_instance(inst, "power_price", "dc", 2)
    assert power.owned[0].placements[0].busy_energy == 60
    assert power.sites["dc"].energy_month == {"srv": 20}
    line = scale_instance(inst, "bandwidth_price", "dc", 3).sites["dc"]
    assert (line.bandwidth_month, line.extra_mbps_cost) == (150, 21)
    assert scale_instance(inst, "rack_rent", "dc", 3).owned == inst.owned


def test_a_penalty_taking_a_share_of_the_price_moves_with_it() -> None:
    """A soft rule may charge a share of the missing option's cost (its servers' price, or
    its rental over the horizon): a price probe prices that share again, as a catalogue
    re-priced and generated again would; a fixed amount stays."""
    # Rental of 1500: 100 fixed + 5 % of 1500 = 175; at x0.5 (750): 100 + 37.5 -> 138.
    rent = dataclasses.replace(RENT, penalty=175, penalty_shares=((100.0, 0.05),))
    # One server of 1000 (VAT in): 2 % of it = 20 on the option, plus 30 not priced on it
    # (a rule charging money only); 10 % = 100 at the site. At x2 (2000): 40 + 30, 200.
    here = Placement("dc", penalty=100, penalty_shares=((0.0, 0.1),))
    own = dataclasses.replace(
        OWN,
        placements=(here,),
        penalty=50,
        penalty_base=1000.0,
        penalty_shares=((0.0, 0.02),),
    )
    inst = dataclasses.replace(SMALL, owned=(own,), cloud=(rent,))
    cheaper = scale_instance(inst, "cloud_price", "cloud-x", 0.5).cloud[0]
    assert (cheaper.cost_total, cheaper.penalty) == (750, 138)
    dearer = scale_instance(inst, "server_price", "srv", 2).owned[0]
    assert (dearer.penalty, dearer.placements[0].penalty) == (70, 200)
    assert dearer.penalty_base == 2000.0
    assert scale_instance(inst, "server_price", "srv", 2).cloud == inst.cloud
    assert scale_instance(inst, "cloud_price", "cloud-x", 0.5).owned == inst.owned


def test_plan_key_compares_choices_not_cost() -> None:
    base = probe_solve(SMALL, CONFIG, None)
    dearer = scale_instance(SMALL, "server_price", "srv", 1.2)
    moved = probe_solve(dearer, CONFIG, base)
    assert moved.costs is not None and base.costs is not None
    assert moved.costs.tco != base.costs.tco
    assert plan_key(moved, dearer) == plan_key(base, SMALL)
    rented = scale_instance(SMALL, "server_price", "srv", 2)
    key = plan_key(probe_solve(rented, CONFIG, base), rented)
    assert key != plan_key(base, SMALL)
    assert describe(key, plan_key(base, SMALL)) == "w: rent 1 x cloud-x"
    assert describe(NO_PLAN, key) == "no feasible plan"


def _same(instance: Instance, base_key: object) -> bool:
    return plan_key(probe_solve(instance, CONFIG, None), instance) == base_key


@pytest.mark.parametrize("param", PARAMS, ids=lambda p: p.kind)
def test_acceptance_each_reported_end_is_a_switch_point(param: Parameter) -> None:
    """At each reported end the plan is the same; just beyond it (by twice the tolerance),
    a re-solve from scratch gives a different plan."""
    base = probe_solve(SMALL, CONFIG, None)
    base_key = plan_key(base, SMALL)
    outcome = analyse_one(Task(param, SMALL, base, base_key, CONFIG))
    r = to_range(outcome)
    ends = [(r.low, 1 / (1 + 2 * REL_TOL), r.below), (r.high, 1 + 2 * REL_TOL, r.above)]
    checked = 0
    for end, beyond, switched in ends:
        if end is None:
            continue
        factor = end / param.current
        assert _same(scale_instance(SMALL, param.kind, param.subject, factor), base_key)
        past = scale_instance(SMALL, param.kind, param.subject, factor * beyond)
        assert not _same(past, base_key)
        assert switched == "w: rent 1 x cloud-x" or switched == "w: 1 x srv at dc"
        checked += 1
    assert checked >= 1


def test_a_rival_card_is_searched_upwards_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A card the plan does not use, made slower, only makes its own options dearer: no
    probe below 1 is spent on it."""
    from gpusolve.analyses import sensitivity as sensitivity

    base = probe_solve(SMALL, CONFIG, None)
    key = plan_key(base, SMALL)
    asked: list[float] = []

    def unchanged(p: Parameter, instance: Instance, inputs: object, factor: float) -> Instance:
        asked.append(factor)
        return SMALL

    monkeypatch.setattr(sensitivity, "scaled_instance", unchanged)
    rival = Parameter("efficiency", "gpu", "efficiency of gpu", "x", 1.0, rival=True)
    r = to_range(analyse_one(Task(rival, SMALL, base, key, CONFIG)))
    assert asked and min(asked) > 1.0
    assert r.low is None and r.searched_low == 0.5 and r.high is None


def test_the_ranges_match_the_hand_computed_switch_points() -> None:
    base = probe_solve(SMALL, CONFIG, None)
    key = plan_key(base, SMALL)
    got = {p.kind: to_range(analyse_one(Task(p, SMALL, base, key, CONFIG))) for p in PARAMS}
    server = got["server_price"]
    assert server.low is None and server.searched_low == pytest.approx(100.0)
    assert server.high == pytest.approx(1320, rel=REL_TOL)
    assert server.above == "w: rent 1 x cloud-x" and server.above_tco == 1500
    cloud = got["cloud_price"]
    assert cloud.high is None and cloud.low == pytest.approx(1180, rel=REL_TOL)
    assert cloud.below == "w: rent 1 x cloud-x"
    assert got["rack_rent"].high == pytest.approx(31.67, rel=2 * REL_TOL)
    # Energy 10 a month: renting wins above (1500 - 1000 - 60) / 12 = 36.7 (x3.67).
    assert got["power_price"].high == pytest.approx(36.67, rel=2 * REL_TOL)


def test_a_rental_that_becomes_unaffordable_switches_to_no_plan() -> None:
    budget = dataclasses.replace(SMALL, owned=(), capex_max=None, monthly_max=200)
    base = probe_solve(budget, CONFIG, None)
    key = plan_key(base, budget)
    p = Parameter("cloud_price", "cloud-x", "price of cloud-x", "CNY/instance-hour", 1500.0)
    r = to_range(analyse_one(Task(p, budget, base, key, CONFIG)))
    # 200 a month x 12 = 2400 of rental allowed: x1.6.
    assert r.high == pytest.approx(2400, rel=REL_TOL) and r.above == "no feasible plan"


# --------------------------------------------------------------------------- the command


def _pretrain_rented(tmp_path: Path) -> Path:
    """The 70B pretraining example with `margin: 0`, where its plan rents 8 x
    cloud-8x-h800-shanghai (1287 h of a 1440 h deadline). With the default training margin
    (0.15) the run must finish by 1440 / 1.15 = 1252 h, which no rental meets (the offer
    has at most 8 instances), so the plan buys servers and has no cloud price to probe."""
    data = yaml.safe_load((ROOT / "examples" / "pretrain-70b-infiniband.yaml").read_text())
    data["margin"] = 0
    path = tmp_path / "pretrain-70b-no-margin.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_cli_sensitivity_on_a_shipped_example(gpusolve: Callable[..., Any], tmp_path: Path) -> None:
    example = str(_pretrain_rented(tmp_path))
    result = gpusolve("plan", example, "--sensitivity", "--format", "json", "--time-limit", "5")
    assert result.code == 0, result.err
    assert "sensitivity" in result.err  # the progress line; no bar off a terminal
    plan = json.loads(result.out)
    ranges = plan["sensitivity"]["ranges"]
    assert {r["kind"] for r in ranges} >= {"cloud_price", "efficiency"}
    for r in ranges:
        assert r["searched_low"] < r["current"] < r["searched_high"]
        for end in (r["low"], r["high"]):
            assert end is None or r["searched_low"] <= end <= r["searched_high"]
    # The text and markdown renderers show the same analysis (no second run needed).
    from gpusolve.models.plan import Plan
    from gpusolve.render import render_plan

    parsed = Plan.model_validate(plan)
    text = render_plan(parsed, "text")
    assert "Sensitivity" in text and "price of cloud-8x-h800-shanghai" in text
    markdown = render_plan(parsed, "markdown")
    assert "## Sensitivity" in markdown and "| price of cloud-8x-h800-shanghai" in markdown


# --------------------------------------------------------------------------- a shipped example

CATALOG_FIELD: dict[str, tuple[str, str]] = {
    "server_price": ("servers", "price"),
    "rack_rent": ("colo_offers", "rack_price_per_month"),
    "power_price": ("colo_offers", "power_price_per_kwh"),
    "bandwidth_price": ("colo_offers", "bandwidth_price_per_mbps_month"),
    "cloud_price": ("cloud_offers", "price_per_hour"),
}


NETWORK_GROUPS = ("switches", "links", "nics", "storage")


def _group(catalog: Any, kind: str, subject: str) -> str:
    if kind in ("network_price", "storage_price"):
        return next(g for g in NETWORK_GROUPS if subject in getattr(catalog, g))
    return CATALOG_FIELD[kind][0]


def _repriced(item: Any, kind: str, value: float) -> Any:
    """The catalogue item at `value` of the parameter; a cloud offer's tiers (hourly,
    monthly, reserved) move together."""
    if kind in ("network_price", "storage_price"):
        return item.model_copy(update={"price": value})
    field = CATALOG_FIELD[kind][1]
    if kind != "cloud_price":
        return item.model_copy(update={field: value})
    factor = value / item.price_per_hour
    reserved = [
        r.model_copy(update={"price_per_month": r.price_per_month * factor}) for r in item.reserved
    ]
    monthly = None if item.price_per_month is None else item.price_per_month * factor
    return item.model_copy(
        update={"price_per_hour": value, "price_per_month": monthly, "reserved": reserved}
    )


CHAT = "chat-day-lora-night.yaml"


def _two_node_chat(tmp_path: Path) -> Path:
    """The day/night example with five times the nightly LoRA tokens: the LoRA then needs
    two servers, so the plan buys a fabric and a storage node (with issue 35's China
    catalogue, one H20 server serves both shifts of the example and buys neither)."""
    text = (ROOT / "examples" / CHAT).read_text(encoding="utf-8")
    assert "tokens: 8.0e8 " in text
    path = tmp_path / "chat-two-node.yaml"
    path.write_text(text.replace("tokens: 8.0e8 ", "tokens: 4.0e9 "), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def two_node(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    """The two-node chat's run, the instance `plan` solves for it and its plan: prepared
    and solved once for the tests that start from them (deterministic: one worker, a work
    limit, a seed)."""
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(_two_node_chat(tmp_path_factory.mktemp("two-node")), [], [])
    base = _instance(run, run.catalog)
    return run, base, probe_solve(base, CONFIG, None)


@pytest.mark.parametrize(
    ("example", "kinds"),
    [
        (
            CHAT,
            {"server_price", "rack_rent", "power_price", "network_price", "storage_price"},
        ),
        ("south-latency-north-batch.yaml", {"cloud_price"}),
    ],
)
def test_acceptance_on_a_shipped_example_through_the_catalogue(
    example: str, kinds: set[str], two_node: tuple[Any, Any, Any]
) -> None:
    """The ranges come from scaled optimiser coefficients; here each end is checked by
    re-pricing the catalogue itself and generating the candidates again: the plan is the
    same at the reported end and differs just beyond it."""
    from gpusolve.analyses.sensitivity import analyse
    from gpusolve.plan.inputs import prepare_run

    if example == CHAT:
        run, base_instance, base_plan = two_node
    else:
        run = prepare_run(ROOT / "examples" / example, [], [])
        base_instance = _instance(run, run.catalog)
        base_plan = probe_solve(base_instance, CONFIG, None)
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    result = analyse(base_instance, inputs, CONFIG, 1, efficiency=False)
    assert {r.kind for r in result.ranges} >= kinds
    base_key = plan_key(base_plan, base_instance)

    def key_at(kind: str, subject: str, value: float) -> object:
        group = _group(run.catalog, kind, subject)
        items = getattr(run.catalog, group)
        item = _repriced(items[subject], kind, value)
        catalog = run.catalog.model_copy(update={group: {**items, subject: item}})
        instance = _instance(run, catalog)
        return plan_key(probe_solve(instance, CONFIG, None), instance)

    ends = 0
    for r in result.ranges:
        for end, beyond in ((r.low, 1 / (1 + 2 * REL_TOL)), (r.high, 1 + 2 * REL_TOL)):
            if end is None:
                continue
            assert key_at(r.kind, r.subject, end) == base_key, (r.parameter, end)
            assert key_at(r.kind, r.subject, end * beyond) != base_key, (r.parameter, end)
            ends += 1
    assert ends >= 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_during_the_analysis_prints_the_plan_and_exits_130(signum: int) -> None:
    """The plan is finished before the analysis starts: a Ctrl-C (or SIGTERM) there keeps
    it, ends the pool's workers and exits 130."""
    example = str(ROOT / "examples" / "chat-day-lora-night.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusolve", "plan", example, "--sensitivity"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = ""
    end = time.monotonic() + 120
    while "sensitivity" not in seen and time.monotonic() < end:
        seen += proc.stderr.readline()
    time.sleep(0.5)  # the pool is running
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + err
    assert out.startswith("Plan (min-tco, proven optimal)") and "Sensitivity" not in out
    assert "interrupted during the sensitivity analysis" in err


# --------------------------------------------------------------------------- rendering


def test_the_table_marks_open_ends_and_names_the_switched_plans() -> None:
    from gpusolve.models.plan import Sensitivity, SensitivityRange
    from gpusolve.render.sensitivity import sensitivity_markdown, sensitivity_text

    held = SensitivityRange(
        kind="server_price",
        subject="srv",
        parameter="price of srv",
        unit="CNY/server",
        current=1000.0,
        low=None,
        high=1320.0,
        searched_low=100.0,
        searched_high=10_000.0,
        above="w: rent 1 x cloud-x",
        above_tco=1500,
    )
    s = Sensitivity(ranges=[held], solves=12)
    text = "\n".join(sensitivity_text(s, "CNY"))
    assert "price of srv (CNY/server)" in text
    assert "100 (-90%)*" in text and "1,320 (+32%)" in text and "1,320 (+32%)*" not in text
    assert "above: w: rent 1 x cloud-x (TCO 1,500 CNY)" in text and "below:" not in text
    assert "12 re-solves\n" in text + "\n" and " s\n" not in text + "\n"  # no wall time
    timed = "\n".join(sensitivity_text(s.model_copy(update={"wall_s": 2.5}), "CNY"))
    assert "12 re-solves in 2.5 s" in timed
    md = "\n".join(sensitivity_markdown(s, "CNY"))
    assert "| price of srv (CNY/server) | 1,000 | 100 (-90%)* | 1,320 (+32%) | - |" in md
    assert sensitivity_text(None, "CNY") == [] == sensitivity_markdown(None, "CNY")


@pytest.mark.parametrize(
    ("example", "card", "factor"),
    [
        ("finetune-7b-deadline.yaml", "h100-sxm", 1.2),
        ("chat-day-lora-night.yaml", "ascend-910b", 1.05),
    ],
)
def test_one_card_generated_again_equals_generating_everything(
    example: str, card: str, factor: float
) -> None:
    """An efficiency probe generates only the scaled card's options and merges them into
    the plan's instance: the options, in the same order, and the plan must be those of a
    generation from the whole re-scaled catalogue."""
    from gpusolve.candidates.scaling import card_instance, scale_card
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(ROOT / "examples" / example, [], [])
    base = _instance(run, run.catalog)
    merged = card_instance(base, CandidateInputs(run.reqs, run.catalog, run.policies), card, factor)
    cards = {**run.catalog.cards, card: scale_card(run.catalog.cards[card], factor)}
    full = _instance(run, run.catalog.model_copy(update={"cards": cards}))
    assert merged.owned == full.owned and merged.cloud == full.cloud
    assert merged.owned != base.owned or merged.cloud != base.cloud  # the card did move
    assert plan_key(probe_solve(merged, CONFIG, None), merged) == plan_key(
        probe_solve(full, CONFIG, None), full
    )


def test_a_card_whose_options_change_what_every_option_misses_is_generated_whole() -> None:
    """When the re-generated card's options meet a preference every option missed before,
    the other options' penalties change too: the probe then generates everything again.
    Here the plan's instance says every option missed a preference that none of the
    card's new options misses (a key no rule has), so what every option misses changes."""
    from gpusolve.candidates.scaling import card_instance, scale_card
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(ROOT / "examples" / "finetune-7b-deadline.yaml", [], [])
    card, factor = "h100-sxm", 1.2
    base = _instance(run, run.catalog)
    fake = ("no-such-rule", "card")
    missed = {w: frozenset((c, k | {fake}) for c, k in m) for w, m in base.missed.items()}
    assert any(missed.values())
    told = dataclasses.replace(base, missed=missed)
    merged = card_instance(told, CandidateInputs(run.reqs, run.catalog, run.policies), card, factor)
    cards = {**run.catalog.cards, card: scale_card(run.catalog.cards[card], factor)}
    full = _instance(run, run.catalog.model_copy(update={"cards": cards}))
    assert merged == full  # the whole generation, its own record of what options miss included


@pytest.mark.parametrize("factor", [0.25, 4.0])
def test_a_network_price_priced_again_equals_generating_everything(
    factor: float, two_node: tuple[Any, Any, Any]
) -> None:
    """A switch, link or storage probe prices a catalogue copy through the candidates
    stage's network functions: the instance must be the one a whole generation from the
    re-priced catalogue gives, and each such item the plan buys is a parameter."""
    from gpusolve.analyses.sensitivity import bought_network
    from gpusolve.candidates.scaling import network_instance, scale_item

    run, base, plan = two_node
    items = bought_network(plan, base, run.catalog)
    kinds = {kind for kind, *_ in items}
    assert kinds == {"network_price", "storage_price"}
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    for kind, item_id, _unit, price in items:
        assert price == getattr(run.catalog, _group(run.catalog, kind, item_id))[item_id].price
        merged = network_instance(base, inputs, item_id, factor)
        full = _instance(run, scale_item(run.catalog, item_id, factor))
        assert merged == full, item_id
        assert merged != base, item_id  # the price did move
    assert network_instance(base, inputs, items[0][1], 1.0) == base


def _instance(run: Any, catalog: Any) -> Any:
    """The instance `plan` solves for `run` on `catalog` (prepared afresh)."""
    from gpusolve.candidates.prepare import prepare

    return prepare(run.reqs, catalog, run.policies).cand.instance


def _hedged_chat(folder: Path) -> Path:
    """A small chat in northern Jiangsu (no rental there: it buys) hedged over two
    scenarios, the demand doubling in one: a two-stage model that buys servers and racks
    and pays power and network, in a few seconds where the shipped scenarios example
    takes tens (the hedged machinery is the same)."""
    path = folder / "hedged-chat.yaml"
    path.write_text(
        CHAT_NORTH + "scenarios:\n  - name: nominal\n    probability: 0.6\n"
        "  - name: growth\n    probability: 0.4\n    demand: {chat: 2}\n",
        encoding="utf-8",
    )
    return path


def _hedged_run(folder: Path) -> tuple[Any, Any]:
    from gpusolve.plan import make_plan
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.plan.solved import Hedged, PlanOptions

    run = prepare_run(_hedged_chat(folder), [], [])
    solved = make_plan(run, PlanOptions(config=CONFIG))
    assert isinstance(solved.solution, Hedged)
    return run, solved.solution


def test_acceptance_a_hedged_plans_ends_are_switch_points(tmp_path: Path) -> None:
    """The two-stage plan's ranges (prices): at each reported end, the two-stage model
    solved afresh (no hint) with the price there keeps the purchase and every scenario's
    plan; just beyond, it changes."""
    from gpusolve.analyses.probing import hedged_key
    from gpusolve.analyses.sensitivity import analyse_hedged
    from gpusolve.optimize.twostage import solve as twostage

    run, hedged = _hedged_run(tmp_path)
    scenarios = list(hedged.weighed)
    base = twostage.solve_two_stage(scenarios, CONFIG)
    assert base.first is not None
    purchase = {k: n for k, n in base.first.servers.items() if n}
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    result = analyse_hedged(hedged, inputs, CONFIG, 2, purchase, efficiency=False)
    kinds = {r.kind for r in result.ranges}
    assert {"server_price", "rack_rent", "power_price", "network_price"} <= kinds
    base_key = hedged_key(base, scenarios)

    def key_at(kind: str, subject: str, factor: float) -> object:
        scaled = [
            dataclasses.replace(s, instance=scale_instance(s.instance, kind, subject, factor))
            for s in scenarios
        ]
        return hedged_key(twostage.solve_two_stage(scaled, CONFIG), scaled)

    ends = 0
    for r in result.ranges:
        if r.kind in ("network_price", "storage_price"):
            continue  # priced through the catalogue: test_a_network_price_priced_again...
        for end, beyond in ((r.low, 1 / (1 + 2 * REL_TOL)), (r.high, 1 + 2 * REL_TOL)):
            if end is None:
                continue
            factor = end / r.current
            assert key_at(r.kind, r.subject, factor) == base_key, (r.parameter, end)
            assert key_at(r.kind, r.subject, factor * beyond) != base_key, (r.parameter, end)
            ends += 1
    assert ends >= 2


def test_a_plan_hedged_over_scenarios_gets_its_own_ranges(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    """`plan --sensitivity` on a scenarios: block analyses the hedged plan: a switched end
    names the purchase it buys instead."""
    result = gpusolve(
        "plan",
        "-q",
        str(_hedged_chat(tmp_path)),
        "--sensitivity",
        "--format",
        "json",
    )
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    ranges = plan["sensitivity"]["ranges"]
    assert {r["kind"] for r in ranges} >= {"server_price", "rack_rent", "efficiency"}
    switched = [r for r in ranges if r["above"] is not None]
    assert switched and all("in scenario " in r["above"] for r in switched)
    assert any(r["above"].startswith("buys ") for r in switched)
    assert not any("--sensitivity" in w for w in plan["warnings"])


def test_a_stopped_analysis_starts_no_further_task() -> None:
    from gpusolve.analyses.pool import Stop, Stopped, run_tasks
    from gpusolve.optimize import interrupt

    base = probe_solve(SMALL, CONFIG, None)
    key = plan_key(base, SMALL)
    tasks = [Task(p, SMALL, base, key, CONFIG) for p in PARAMS]
    stop = Stop()
    done: list[object] = []

    def after_first(outcome: object) -> None:
        done.append(outcome)
        stop.stop()

    try:
        with pytest.raises(Stopped):
            run_tasks(tasks, 1, None, after_first, stop)
    finally:
        interrupt.reset()  # stop() asked every search in this process to end
    assert len(done) == 1


def test_ranges_are_only_given_around_the_plan_shown(tmp_path: Path) -> None:
    """A plan shown that is not the reference re-solve's (a time-limited one) gets no
    ranges: they would describe another plan."""
    from gpusolve.analyses.sensitivity import OtherPlan, analyse
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(_pretrain_rented(tmp_path), [], [])
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    with pytest.raises(OtherPlan, match="rent"):
        analyse(_instance(run, run.catalog), inputs, CONFIG, 1, expected=(("other",),))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusolve.analyses.pool import progress_bar

    for stream, enabled, drawn in (
        (_Terminal(), True, True),
        (_Terminal(), False, False),  # -q
        (io.StringIO(), True, False),  # a pipe or a log file
    ):
        monkeypatch.setattr(sys, "stderr", stream)
        bar = progress_bar(4, enabled)
        bar.update(2)
        bar.close()
        assert ("0/4" in stream.getvalue()) is drawn, stream.getvalue()
