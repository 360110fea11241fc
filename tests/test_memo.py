"""The purchase memo: when the money is paid, payback against the cheapest all-rental plan,
the facts that would change the decision, the Markdown memo, and charts that load only
when drawn (the browser checks of the HTML memo are in tests/test_html_report.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from tests.support.phased import CHAT_NORTH
from tests.support.shipped import ROOT

from gpusolve.analyses import payback
from gpusolve.explain.payments import (
    credit_total,
    payback_month,
    payment_months,
    run_weights,
    spend,
)
from gpusolve.load.data import data_dir
from gpusolve.models.plan import (
    Cost,
    CostBreakdown,
    CostItem,
    Deployment,
    Parallel,
    Payback,
    Plan,
    ResaleCredit,
    Sensitivity,
    SensitivityRange,
    SolverInfo,
)
from gpusolve.optimize.ir import SolveConfig
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.plan.solved import PlanOptions
from gpusolve.render.markdown import plan_markdown
from gpusolve.render.memo import deciding_facts, memo, periods, rental_margin

CHAT = ROOT / "examples" / "chat-day-lora-night.yaml"
# A dear 8 x Ascend 910B rental in northern Jiangsu, the only region the chat example
# allows: renting everything becomes possible, and buying still wins (test data).
NORTH_CLOUD = """
currency: CNY
cloud_offers:
  - id: cloud-8x-910b-suqian
    provider: test offer
    card: ascend-910b
    gpus_per_instance: 8
    price_per_hour: 120
    price_per_month: 70080
    region: jiangsu-north
    max_instances: 8
    fabric: roce
    fabric_gbps: 200
    peer_bandwidth_gbs: 392
    pricing: {illustrative: true, as_of: "2026-11", source: "test: a dear northern rental"}
    source: test
"""


# ------------------------------------------------------------------ hand-made figures


def line(kind: str, amount: float, **extra: Any) -> CostItem:
    fields: dict[str, Any] = {"subject": "x", "detail": "", **extra}
    return CostItem(kind=kind, amount=amount, **fields)  # type: ignore[arg-type]


def cost_of(items: list[CostItem], months: int = 12, resale: float = 0) -> Cost:
    """A plan's cost from its lines; `resale`: the servers bought, sold at the horizon (a
    credit apart from the TCO)."""
    end = ResaleCredit(amount=resale, month=months, basis="test") if resale else None
    return Cost(
        capex=sum(i.amount for i in items if i.kind == "servers_capex"),
        monthly_opex=0,
        tco=sum(i.amount for i in items),
        currency="CNY",
        horizon_months=months,
        breakdown=CostBreakdown(items=items),
        horizon_resale=end,
    )


def trainer(hours_per_run: float) -> Deployment:
    parallel = Parallel(
        tp=1, pp=1, dp=8, zero_stage=1, gradient_checkpointing="none", micro_batch=1, grad_accum=1
    )
    return Deployment(
        workload="ft",
        mode="cloud",
        card="h800-sxm",
        server=None,
        cloud_offer="cloud-a",
        servers=1,
        gpus=8,
        parallel=parallel,
        site=None,
        schedule="always",
        memory_per_gpu_gb=1,
        card_memory_gb=80,
        usable_memory_gb=64,
        headroom=0.2,
        time_to_train_h=hours_per_run,
        throughput=1,
    )


def test_each_kind_is_paid_when_it_is_bought_or_used() -> None:
    # 12 months of 730 h. Two runs of 100 h: the second starts at 4,380 h, month 7.
    items = [
        line("servers_capex", 1200),
        line("rack_rent", 360),
        line("rack_rent", 50, unit="set-up fee"),
        line("cloud_rental", 200, subject="cloud-a", detail="ft: 1 instance(s) x 200 h"),
    ]
    months = payment_months(cost_of(items, resale=500), [trainer(100)], {"ft": 2})
    assert [m.capex for m in months] == [1200] + [0] * 11
    assert [m.rent for m in months] == [80] + [30] * 11
    assert [m.cloud for m in months] == [100, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0]
    # Credits are not cash: the schedule adds up to the TCO, the resale apart.
    assert sum(m.total for m in months) == 1810 == spend(cost_of(items, resale=500))
    assert credit_total(cost_of(items, resale=500)) == -500


def test_racks_already_contracted_are_paid_again_once_their_months_run_out() -> None:
    renewal = line(
        "rack_rent", 400, site="s", detail="1 contracted rack(s) renewed after the 8 months paid"
    )
    new_rack = line("rack_rent", 120, site="s", detail="1 rack(s) x 10/month x 12 months")
    months = payment_months(cost_of([renewal, new_rack]), [], {}, {"s": 8})
    assert [m.rent for m in months] == [10] * 8 + [110] * 4


def test_a_rental_billed_by_the_month_is_paid_in_equal_months() -> None:
    # One 1,000 h run on a monthly term: months 1 and 2, the same each.
    assert run_weights(12, 1, 1000, whole_months=True)[:3] == [730, 730, 0]
    # By the hour: 730 h in month 1, 270 h in month 2.
    assert run_weights(12, 1, 1000)[:3] == [730, 270, 0]
    # The split is in whole units, its remainder in the last month paid.
    item = line("cloud_rental", 1001, subject="cloud-a", detail="ft: x", unit="instance-month")
    months = payment_months(cost_of([item]), [trainer(1000)], {"ft": 1})
    assert [m.cloud for m in months[:3]] == [500, 501, 0]


def test_payback_is_the_first_month_from_which_buying_stays_cheaper() -> None:
    # Cumulative: buying 100, 110, 120, 130; renting 40, 80, 120, 160: even in month 3.
    assert payback_month([100, 10, 10, 10], [40, 40, 40, 40]) == 3
    assert payback_month([100, 10, 10, 10], [10, 10, 10, 10]) is None
    # Cheaper in month 1, dearer from month 2 on: no payback.
    assert payback_month([10, 100, 0], [20, 20, 20]) is None


def test_the_narrowest_sensitivity_ranges_are_the_deciding_facts() -> None:
    def rng(name: str, low: float | None, high: float | None) -> SensitivityRange:
        return SensitivityRange(
            kind="server_price",
            subject=name,
            parameter=f"price of {name}",
            unit="CNY/server",
            current=100,
            low=low,
            high=high,
            searched_low=10,
            searched_high=1000,
            below="buy 2 x b",
            above="rent c",
            above_tco=5000,
        )

    ranges = [rng("wide", 50, 300), rng("open", None, None), rng("tight", 99, 400)]
    plan = Plan(
        status="optimal",
        objective="min-tco",
        cost=cost_of([line("servers_capex", 100)]),
        solver=SolverInfo(status="optimal", workers=1, seed=1),
        sensitivity=Sensitivity(ranges=ranges),
    )
    facts, source = deciding_facts(plan)
    assert source == "the narrowest sensitivity ranges"
    assert facts[0].startswith("price of tight 1% lower (99 CNY/server, now 100) changes the plan")
    assert "buy 2 x b" in facts[0]
    assert facts[1].startswith("price of wide 50% lower")
    assert facts[2] == "price of open: the plan holds over the whole range searched"


# ------------------------------------------------------------------ a real plan


@pytest.fixture(scope="module")
def bought_and_rented(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """The chat example with a northern rental in the catalogue: servers bought and an
    all-rental plan to compare with."""
    extra = tmp_path_factory.mktemp("catalog") / "north-cloud.yaml"
    extra.write_text(NORTH_CLOUD, encoding="utf-8")
    run = prepare_run(CHAT, (data_dir("catalog"), extra), ())
    options = PlanOptions(config=SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1))
    return payback.run(make_plan(run, options))


def test_payback_solves_the_cheapest_all_rental_plan(bought_and_rented: Plan) -> None:
    plan, pb = bought_and_rented, bought_and_rented.payback
    assert plan.cost is not None and plan.cost.capex > 0
    assert pb is not None and pb.rental_tco is not None and pb.rental_proven_optimal
    assert pb.rental_hardware and all(": rent " in h for h in pb.rental_hardware)
    assert sum(pb.rental_months) == pb.rental_tco == pb.rental_cloud  # nothing owned
    assert pb.saving == pb.rental_tco - spend(plan.cost)
    plan_months = [m.total for m in plan.payments]
    assert pb.payback_month == payback_month(plan_months, pb.rental_months)
    assert pb.payback_month is not None and pb.saving > 0
    assert f"pays back in month {pb.payback_month}" in pb.summary
    # The month before, renting was still cheaper: the payback month is the first.
    before = pb.payback_month - 1
    assert sum(plan_months[:before]) > sum(pb.rental_months[:before])
    cut = pb.saving / pb.rental_tco
    facts, _ = deciding_facts(plan)
    assert any(f"cloud prices {cut:.0%} lower would make renting" in f for f in facts)


def with_payback(saving: float, rental_cloud: float, residual: float) -> Plan:
    return Plan(
        status="optimal",
        objective="min-tco",
        cost=cost_of([line("servers_capex", 1000)], resale=-residual),
        solver=SolverInfo(status="optimal", workers=1, seed=1),
        payback=Payback(
            basis="test",
            rental_tco=rental_cloud,
            rental_cloud=rental_cloud,
            saving=saving,
            summary="test",
        ),
    )


def test_the_margin_over_renting_names_what_would_flip_it() -> None:
    # Buying saves 250 of a 1,000 cloud bill: cloud 25% cheaper flips it.
    assert (
        "cloud prices 25% lower would make renting" in rental_margin(with_payback(250, 1000, 0))[0]
    )
    # Renting is 100 cheaper in cash; the 300 book value makes buying win: a resale
    # below 100 flips it.
    [fact] = rental_margin(with_payback(-100, 1000, -300))
    assert "wins only by the servers' resale value (300 CNY" in fact
    assert "a resale below 100 CNY" in fact
    # Renting is cheaper even counting the credit: the plan buys for other reasons.
    assert "not for the money" in rental_margin(with_payback(-400, 1000, -300))[0]
    # A tie (the plan buys only what the all-rental plan needs too): said so, no "-0".
    [tie] = rental_margin(with_payback(0, 1000, 0))
    assert "costs the same" in tie and "-0" not in tie


def test_the_markdown_memo_comes_first_and_each_cost_line_once(bought_and_rented: Plan) -> None:
    plan = bought_and_rented
    assert plan.cost is not None
    text = plan_markdown(plan)
    order = ["## The decision", "**Buy**", "**Where**", "capex (at purchase)"]
    order += ["## When the money is paid", "## Details", "### Cost and bill of materials"]
    at = [text.index(heading) for heading in order]
    assert at == sorted(at)
    memo_part = text[: text.index("## When the money is paid")]
    assert f"**{spend(plan.cost):,.0f}**" in memo_part  # the TCO paid
    assert f"{plan.cost.capex:,.0f}" in memo_part
    for item in plan.cost.breakdown.items:
        assert text.count(item.detail) == 1, item.detail
    assert "## Bill of materials" not in text
    rows = periods(plan)
    assert rows[-1].cumulative == spend(plan.cost)
    assert rows[-1].rental_cumulative == plan.payback.rental_tco  # type: ignore[union-attr]
    assert f"month {plan.payback.payback_month}" in memo_part  # type: ignore[union-attr]


def catalogue_ids(plan: Plan) -> list[str]:
    """The catalogue ids a plan's products carry (its appendix lists each)."""
    return [s.id for s in plan.sources]


def ids_in(text: str, ids: list[str]) -> list[str]:
    """The ids that occur whole in `text` (not inside a longer id or word)."""
    return [i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text)]


def test_the_markdown_memo_is_dated_signed_and_names_products(
    bought_and_rented: Plan, tmp_path: Any
) -> None:
    import yaml

    from gpusolve.render.about import About, product_names

    plan = bought_and_rented
    assert plan.cost is not None
    extra = tmp_path / "north-cloud.yaml"
    extra.write_text(NORTH_CLOUD, encoding="utf-8")
    run = prepare_run(CHAT, (data_dir("catalog"), extra), ())
    names = product_names(run.catalog)
    about = About("2026-12-06", "9.9.9", ("chat-day-lora-night.yaml",), names)
    text = plan_markdown(plan, about)
    assert text.startswith(
        "# GPU procurement plan\n\n_Made on 2026-12-06 by gpusolve 9.9.9 from "
        "chat-day-lora-night.yaml._\n"
    )
    decision = text[text.index("## The decision") : text.index("## When the money is paid")]
    # Products by name in the memo, read straight from the shipped catalogue's YAML.
    shipped = yaml.safe_load((ROOT / "catalog" / "servers.yaml").read_text(encoding="utf-8"))
    server_names = {s["id"]: s["name"] for s in shipped["servers"]}
    bought = [i.subject for i in plan.cost.breakdown.items if i.kind == "servers_capex"]
    assert bought and all(f"| {server_names[s]} |" in decision for s in bought)
    # No catalogue id in the memo, what would change the decision included; each id in
    # the appendix beside its product's name.
    ids = catalogue_ids(plan)
    assert ids and ids_in(decision, ids) == []
    appendix = text[text.index("## Sources") :]
    for i in ids:
        assert f"| {names.get(i, i)} | `{i}` |" in appendix
    # A `|` in a catalogue's name does not split the table's cells.
    piped = About(names={**names, bought[0]: "Vendor | Box"})
    row = next(r for r in plan_markdown(plan, piped).splitlines() if "Vendor" in r)
    assert row.startswith("| Vendor / Box | ") and row.count("|") == 6
    # Without names (a plan rendered alone) the memo still renders, ids and all.
    assert ids_in(plan_markdown(plan).split("## When the money is paid")[0], ids)


def test_the_markdown_memo_of_the_command_has_its_date_version_and_input_name(
    gpusolve: Any,
) -> None:

    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    out = gpusolve("plan", "-q", str(CHAT), "--format", "markdown", "--no-sensitivity").out
    made = out.splitlines()[2]
    assert re.fullmatch(
        rf"_Made on \d{{4}}-\d{{2}}-\d{{2}} by gpusolve {re.escape(version)} from "
        r"chat-day-lora-night\.yaml\._",
        made,
    ), made
    for folder in (str(ROOT), str(Path.home()), str(data_dir("catalog"))):
        assert folder not in out, folder


def test_a_memo_is_dated_by_the_day_or_by_source_date_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import UTC, datetime

    from gpusolve.render.about import About, made_on

    assert made_on(datetime(2026, 12, 6, 23, 59, tzinfo=UTC)) == "2026-12-06"
    # 86,400 s after the epoch: 1970-01-02 (reproducible builds fix the day).
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert made_on() == "1970-01-02"
    assert About("1970-01-02", "1.2", ("a.yaml", "b.yaml")).line() == (
        "Made on 1970-01-02 by gpusolve 1.2 from a.yaml, b.yaml."
    )
    assert About().line() == "Made by gpusolve."


def test_catalogue_ids_are_named_only_whole() -> None:
    from gpusolve.render.about import named

    names = {"h20": "NVIDIA H20", "hgx-h20-8gpu": "NVIDIA HGX H20 8-GPU", "gds-sq": "GDS, Suqian"}
    text = "price of hgx-h20-8gpu 4% lower changes the plan to: chat: 2 x hgx-h20-8gpu at gds-sq."
    assert named(text, names) == (
        "price of NVIDIA HGX H20 8-GPU 4% lower changes the plan to: chat: 2 x NVIDIA HGX H20 "
        "8-GPU at GDS, Suqian."
    )
    assert named("efficiency of h20 (x1.05)", names) == "efficiency of NVIDIA H20 (x1.05)"
    assert named("h20x and my-h20 stay", names) == "h20x and my-h20 stay"


# ------------------------------------------------------------------ charts load on demand


def test_help_and_plan_text_import_no_charts_library() -> None:
    probe = (
        "import sys\n"
        "from gpusolve.cli import main\n"
        "for args in (['--help'], ['plan', '-q', sys.argv[1]]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), (args, exc.code)\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "                    ('matplotlib', 'jinja2', 'PIL'))\n"
        "    print('LOADED', args[0], loaded, file=sys.stderr)\n"
    )
    startup = ROOT / "examples" / "startup-tight-capex.yaml"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(startup)], capture_output=True, text=True, check=True
    )
    loaded = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED")]
    assert loaded == ["LOADED --help []", "LOADED plan []"]
    assert "Plan (min-tco" in done.stdout  # the plan was printed, as text


def test_charts_come_with_the_base_install() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [d.split(">")[0].split("=")[0].strip() for d in project["dependencies"]]
    assert "matplotlib" in names
    assert "report" in project["optional-dependencies"]  # old install commands still work


def test_the_plan_json_carries_the_schedule(gpusolve: Any) -> None:
    startup = ROOT / "examples" / "startup-tight-capex.yaml"
    result = gpusolve("plan", "-q", str(startup), "--format", "json")
    data = json.loads(result.out)
    assert len(data["payments"]) == data["cost"]["horizon_months"]
    assert sum(m["total"] for m in data["payments"]) == data["cost"]["tco"]
    assert data["payback"]["payback_month"] is None  # it buys nothing
    assert "buys no hardware" in data["payback"]["summary"]


def test_a_plan_without_a_cost_has_no_memo() -> None:
    info = SolverInfo(status="infeasible", workers=1, seed=1)
    plan = Plan(status="infeasible", objective="min-tco", cost=None, solver=info)
    assert memo(plan) is None and periods(plan) == []
    assert plan_markdown(plan).startswith("# GPU procurement plan\n\n**No feasible plan.**")


# ------------------------------------------------------------------ the memo's default ranges


# Two scenarios of a small chat in northern Jiangsu (no rental there: it buys), the demand
# doubling in one: a hedged plan's memo in 2 s, where the shipped scenarios example's bounded
# analysis takes 13 s of CPU for the same path through the two-stage model.
HEDGED_CHAT = (
    CHAT_NORTH + "scenarios:\n  - name: nominal\n    probability: 0.6\n"
    "  - name: growth\n    probability: 0.4\n    demand: {chat: 2}\n"
)
# The same chat with one A10 server already owned in Huai'an: the plan keeps it in service
# and buys a second (108,500 CNY of capex), a plan over an inventory in 1.6 s where the
# shipped owned-A800 example's bounded analysis takes 14 s of CPU.
OWNED_CHAT = CHAT_NORTH + (
    "owned:\n  servers:\n    - server: inf-2x-a10\n      count: 1\n"
    "      site: huaian-6.6kw-air\n      bought: 2024-06\n      price_paid: 65000\n"
    "      resale: 30000\n"
)


@pytest.mark.slow
def test_every_example_that_buys_names_what_would_flip_it_and_the_plan_beyond(
    tmp_path: Path,
) -> None:
    """The memo's bounded sensitivity (run by default for html and markdown): on every
    shipped single-plan example whose plan buys, and on a small hedged plan and a small
    plan over an inventory, "what would change the decision" names a price or an
    efficiency, how far it must move, and the plan beyond it."""
    from tests.support.example_plans import CONFIG, solved
    from tests.support.shipped import EXAMPLES

    from gpusolve.analyses import sensitivity
    from gpusolve.render.about import product_names

    small = []
    for name, text in (("hedged", HEDGED_CHAT), ("owned", OWNED_CHAT)):
        path = tmp_path / f"{name}-chat.yaml"
        path.write_text(text, encoding="utf-8")
        run = prepare_run(path, (data_dir("catalog"),), ())
        small.append((name, make_plan(run, PlanOptions(CONFIG))))
    checked = []
    for name, made in [(e.stem, solved(e)) for e in EXAMPLES] + small:
        run, plan = made.run, made.plan
        if (run.reqs.scenarios or run.reqs.owned.servers) and name not in ("hedged", "owned"):
            continue  # those paths: the small hedged and owned plans above
        if not isinstance(plan, Plan) or plan.cost is None or not plan.cost.capex:
            continue
        ranged = sensitivity.run(made, bar=False, workers=1, bounded=True)
        assert isinstance(ranged, Plan)
        facts, source = deciding_facts(ranged)
        assert source.startswith("the narrowest sensitivity ranges"), name
        flips = [f for f in facts if " changes the plan to: " in f and "(TCO " in f]
        assert flips, (name, facts)
        # The memo says them with the products' names, no catalogue id.
        shown = memo(ranged, product_names(run.catalog))
        assert shown is not None and len(shown.facts) == len(facts), name
        assert ids_in(" ".join(shown.facts), catalogue_ids(ranged)) == [], shown.facts
        checked.append(name)
    assert {"hedged", "owned"} <= set(checked) and len(checked) >= 6, checked


def all_rental(buying_tco: float | None, capex: float | None, note: str = "") -> Plan:
    rent = line("cloud_rental", 1000, subject="cloud-a", detail="ft: x")
    return Plan(
        status="optimal",
        objective="min-tco",
        cost=cost_of([rent]),
        solver=SolverInfo(status="optimal", workers=1, seed=1),
        payback=Payback(
            basis="test",
            rental_tco=None,
            summary="test",
            buying_tco=buying_tco,
            buying_capex=capex,
            buying_hardware=["ft: 1 x srv at s"],
            buying_note=note,
        ),
    )


def test_an_all_rental_memo_says_what_buying_would_cost_and_why_it_loses() -> None:
    # Renting costs 1,000; buying 1,500 with 1,000 of capex: 500 dearer, so hardware
    # 50% cheaper (500 / 1,000) makes buying the cheaper plan.
    [fact] = rental_margin(all_rental(1500, 1000))
    assert "buying instead (ft: 1 x srv at s) would cost 1,500 CNY" in fact
    assert "500 CNY more than renting" in fact
    assert "hardware prices 50% lower would make buying the cheaper plan" in fact
    # 2,500 with 1,000 of capex: 1,500 dearer, more than the whole capex.
    assert "even with free hardware" in rental_margin(all_rental(2500, 1000))[0]
    # Cheaper, but over a budget cap: the cap is why it loses.
    [capped] = rental_margin(all_rental(800, 600, "its capex 600 is over the cap of 500"))
    assert capped.endswith("but its capex 600 is over the cap of 500")
    # No buying plan at all.
    [none] = rental_margin(all_rental(None, None, "no server the rules allow can run ft"))
    assert none == "buying instead is not an option: no server the rules allow can run ft"


def test_the_startup_memo_prices_buying_against_its_capex_cap(gpusolve: Any) -> None:
    startup = ROOT / "examples" / "startup-tight-capex.yaml"
    data = json.loads(gpusolve("plan", "-q", str(startup), "--format", "json").out)
    pb = data["payback"]
    assert data["cost"]["capex"] == 0 and pb["buying_tco"] is not None
    # The example caps capex at 300,000: the cheapest buying plan is over it.
    assert pb["buying_capex"] > 300_000
    assert f"its capex {pb['buying_capex']:,.0f} is over the cap of 300,000" == pb["buying_note"]
