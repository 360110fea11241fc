"""Financing as a choice of the plan (`optimize/financing.py`): bought servers split
between cash and a lease, the capex cap counting down payments only, the monthly cap the
instalments, the TCO what financing really costs. Expected figures are derived by hand
from the annuity formula, never read off the solver."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from tests.factories.instances import ONE
from tests.support.cli import run_cli

from gpusolve.optimize.financing import annuity_payment, payments, per_server
from gpusolve.optimize.ir import (
    CloudOption,
    FinanceOffer,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
)
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

PRICE = 1_000_000
RENT_EACH = 1_500_000  # renting one workload's capacity over the horizon
HORIZON = 36
CAP = 1_250_000  # one server in cash and one down payment of 20%, not two servers
# A finance lease: 6% a year, 36 months, 20% down, 1% buy-out.
LEASE = FinanceOffer("lease", annual_rate=0.06, term_months=36, down_payment=0.20, buy_out=0.01)


def _instance(
    capex_max: int | None = None, offers: tuple[FinanceOffer, ...] = (LEASE,)
) -> Instance:
    """Two always-on workloads, each on one server (no rent, energy or bandwidth) or a
    rental at RENT_EACH over the horizon."""
    sku = Sku("s", capex=PRICE, power_w=1_000, rack_units=2, cooling=frozenset({"air"}))
    site = Site(
        "x",
        "r",
        "air",
        rack_w=20_000,
        rack_units=40,
        racks_available=4,
        rack_rent_month=0,
        bandwidth_month=0,
        energy_month={"s": 0},
    )
    owned = tuple(
        OwnedOption(f"{w}-own", w, "s", 1, "always", (Placement("x"),)) for w in ("a", "b")
    )
    cloud = tuple(CloudOption(f"{w}-rent", w, "o", "r", 1, RENT_EACH) for w in ("a", "b"))
    return Instance(
        workloads=("a", "b"),
        skus={"s": sku},
        sites={"x": site},
        owned=owned,
        cloud=cloud,
        horizon_months=HORIZON,
        capex_max=capex_max,
        financing=offers,
    )


def test_the_instalment_is_the_annuity_formula() -> None:
    # 100,000 at 6% a year over 36 months repays 3,042.19 a month (the textbook figure:
    # i = 0.005, 100,000 x 0.005 / (1 - 1.005^-36)); 800,000 financed, eight times that.
    assert annuity_payment(100_000, 0.06, 36) == pytest.approx(3_042.19, abs=0.01)
    p = payments(PRICE, 0.06, 36, 0.20, 0.0)
    assert p.down == 200_000 and abs(p.each - 8 * 3_042.19) <= 0.6
    # A 1% buy-out (10,000) left at the end lowers the payment by its present value's
    # annuity: 10,000 / 1.005^36 = 8,356.45, x 0.030422 = 254.22 a month less.
    q = payments(PRICE, 0.06, 36, 0.20, 0.01)
    assert q.buy_out == 10_000 and abs(q.each - (8 * 3_042.19 - 254.22)) <= 0.6
    assert q.paid == 200_000 + 36 * q.each + 10_000
    # At 0% the payments are the amount financed less the buy-out, in equal parts.
    assert annuity_payment(36_000, 0.0, 36, 0.0) == 1_000


def test_a_capex_cap_for_half_the_servers_leases_the_rest() -> None:
    # The cap of 1,250,000 pays one server in cash and one down payment (200,000), not two
    # servers; the second costs 1,500,000 to rent but PRICE + interest (about 77,000) to
    # lease: lease one, rent none (leasing both would pay interest twice).
    instance = _instance(capex_max=CAP)
    solution = solve(instance, ONE)
    assert solution.status == "optimal" and check(instance, solution) == []
    assert solution.servers == {("s", "x"): 2}
    assert solution.leased == {("s", "x", "lease"): 1}
    lease = payments(PRICE, 0.06, 36, 0.20, 0.01)
    assert solution.costs is not None
    assert solution.costs.financing == lease.paid - PRICE
    assert solution.costs.cash_capex == PRICE + lease.down
    assert solution.costs.tco == 2 * PRICE + lease.paid - PRICE
    assert solution.costs.cloud == 0


def test_without_an_offer_the_same_cap_rents_the_rest() -> None:
    solution = solve(_instance(capex_max=CAP, offers=()), ONE)
    assert solution.servers == {("s", "x"): 1} and not solution.leased
    assert solution.costs is not None and solution.costs.tco == PRICE + RENT_EACH


def test_a_cap_below_every_down_payment_leases_nothing() -> None:
    # 100,000 pays no server and no down payment (200,000): rent both.
    solution = solve(_instance(capex_max=100_000), ONE)
    assert not solution.servers and not solution.leased
    assert solution.costs is not None and solution.costs.tco == 2 * RENT_EACH


@pytest.mark.parametrize("rate", [None, 0.0])
def test_without_a_cap_nothing_is_leased_at_nominal_or_zero_discount(rate: float | None) -> None:
    offer = dataclasses.replace(LEASE, discount_rate=rate)
    instance = _instance(offers=(offer,))
    solution = solve(instance, ONE)
    assert solution.servers == {("s", "x"): 2} and not solution.leased
    assert solution.costs is not None and solution.costs.tco == 2 * PRICE
    assert check(instance, solution) == []


def test_a_discount_rate_above_the_lease_rate_leases_every_server() -> None:
    # At 20% a year the lease's payments are worth about 868,000 today (200,000 down, the
    # annuity of about 24,083 over 36 months at 1.53% a month: x 27.5, the buy-out x 0.58)
    # against 1,000,000 in cash: lease both. The TCO still counts the nominal payments.
    offer = dataclasses.replace(LEASE, discount_rate=0.20)
    instance = _instance(offers=(offer,))
    solution = solve(instance, ONE)
    assert solution.leased == {("s", "x", "lease"): 2}
    f = per_server(offer, PRICE, HORIZON)
    assert 850_000 < f.paid + f.steer < 890_000
    assert solution.costs is not None and solution.costs.tco == 2 * f.paid
    assert check(instance, solution) == []


def test_the_monthly_cap_counts_the_instalments() -> None:
    # Under the capex cap of one server, the second workload is leased (36 instalments)
    # or rented (1,500,000, over 41,000 a month): a monthly cap of exactly one instalment
    # holds the lease; one unit less holds neither, and no plan is left.
    lease = payments(PRICE, 0.06, 36, 0.20, 0.01)
    at = dataclasses.replace(_instance(capex_max=CAP), monthly_max=lease.each)
    solution = solve(at, ONE)
    assert solution.leased == {("s", "x", "lease"): 1} and check(at, solution) == []
    assert solution.costs is not None and solution.costs.instalments == 36 * lease.each
    below = dataclasses.replace(at, monthly_max=lease.each - 1)
    assert solve(below, ONE).status == "infeasible"


# --- the plan's outputs ----------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-day-lora-night.yaml"


def capped_example(folder: Path) -> Path:
    """The chat example under a capex cap that pays for neither of its two servers, the
    plan allowed to finance them."""
    text = EXAMPLE.read_text(encoding="utf-8").replace(
        "horizon_months: 36\n",
        "horizon_months: 36\nbudget:\n  capex_max: 1300000\nfinance:\n  financing: optimise\n",
    )
    reqs = folder / "capped.yaml"
    reqs.write_text(text, encoding="utf-8")
    return reqs


def test_a_plan_that_finances_says_which_servers_on_what_terms_and_why(tmp_path: Path) -> None:
    # The example buys two H20 servers at 1,200,000 each (cloud is ruled out by its
    # regions); a capex cap of 1,300,000 pays for neither in cash. The shipped terms offer
    # instalments at 5% a year over 24 months with 30% down (360,000), and a lease at 6%
    # over 36 months with 20% down and a 1% buy-out: instalments cost less interest.
    # 840,000 financed at 5% over 24 months: 100,000 repays 4,387.14 a month (i = 0.05/12,
    # 100,000 x i / (1 - (1 + i)^-24)), so 8.4 x 4,387.14 = 36,852 a month; each server
    # pays 360,000 + 24 x 36,852 = 1,244,448, 44,448 over its price.
    reqs = capped_example(tmp_path)
    code, out = run_cli("plan", str(reqs), "--format", "json", "--no-sensitivity")
    assert code == 0, out
    plan = json.loads(out)
    [f] = plan["financed"]
    assert (f["server"], f["count"], f["offer"]) == ("hgx-h20-8gpu", 2, "instalments")
    assert abs(f["monthly_per_server"] - 8.4 * 4_387.14) <= 1
    assert f["down_per_server"] == 360_000 and f["paid_per_server"] == 360_000 + 24 * 36_852
    assert "capex cap of 1,300,000" in f["why"]
    items = plan["cost"]["breakdown"]["items"]
    assert [i["amount"] for i in items if i["kind"] == "financing"] == [2 * 44_448]
    assert plan["cost"]["breakdown"]["financing"] == 2 * 44_448
    assert sum(i["amount"] for i in items) == plan["cost"]["tco"]
    # The cash view pays them as the plan financed them: both down payments in the month
    # of delivery, then 2 x 36,852 a month; the TCO already holds the interest.
    cash = plan["cash"]
    [line] = [ln for ln in cash["financed"] if ln["how"] == "instalments"]
    delivered = line["delivery_month"]
    months = {m["month"]: m["financing"] for m in cash["months"]}
    assert months[delivered] == 720_000 and months[delivered + 1] == 2 * 36_852
    assert months[delivered + 24] == 2 * 36_852 and months.get(delivered + 25, 0) == 0
    assert cash["interest"] == 0
    assert any(b["section"] == "server" and "financing" in b["note"] for b in plan["bom"])


def test_the_financed_memo_keeps_its_blocks_apart_and_on_the_first_screen(tmp_path: Path) -> None:
    """The memo of a plan that finances servers, as every example's (test_html_report):
    no two blocks overlap at 390, 800 and 1280 px and in print, the memo ends within the
    first screen and page, and the cash section says what is financed and why."""
    from tests.support import chromium
    from tests.support.memo_layout import BLOCKS, MEASURE, SCREENS, WIDTHS, overlap

    binary = chromium.binary()
    if binary is None:
        pytest.skip("no Chromium binary (.ci/run installs one)")
    page = tmp_path / "capped.html"
    args = ("plan", str(capped_example(tmp_path)), "--no-sensitivity")
    assert run_cli(*args, "--format", "html", "-o", str(page))[0] == 0
    html = page.read_text(encoding="utf-8")
    assert 'id="memo-financed"' in html and "Financed by the plan: 2 x " in html
    with chromium.Browser(binary) as browser:
        for screen, (width, height, media) in WIDTHS.items():
            browser.viewport(width, height, media)
            assert browser.load(page).problems == [], screen
            boxes = browser.evaluate(BLOCKS)["boxes"]
            for i, a in enumerate(boxes):
                assert a["right"] <= width + 0.5, (screen, a)
                for b in boxes[i + 1 :]:
                    assert overlap(a, b) < 1, (screen, a, b)
        for screen, (width, height, media) in SCREENS.items():
            browser.viewport(width, height, media)
            browser.load(page)
            assert browser.evaluate(MEASURE)["memo"]["bottom"] <= height, screen


def test_the_capex_cap_a_plan_needs_counts_down_payments_only() -> None:
    # Renting ruled out, two servers must be bought: in cash they need a cap of 2,000,000;
    # leased, the two down payments of 20%, 400,000.
    from gpusolve.optimize.explain import relaxation

    owned_only = dataclasses.replace(_instance(capex_max=100_000), cloud=())
    leased = relaxation(owned_only, "capex", ONE)
    in_cash = relaxation(dataclasses.replace(owned_only, financing=()), "capex", ONE)
    assert leased is not None and leased.needed == 2 * 200_000
    assert in_cash is not None and in_cash.needed == 2 * PRICE


def test_the_payment_schedule_pays_a_financed_server_over_its_term(tmp_path: Path) -> None:
    # The capped example's two H20 on instalments (24 months, 30% down): month 1 pays the
    # down payments (2 x 360,000) and the network and storage bought in cash (115,500 +
    # 32,000); months 2-25 the rest of the price, 2 x 840,000 / 24 = 70,000, and the
    # interest, 2 x 44,448 / 24 = 3,704; nothing of either after month 25.
    reqs = capped_example(tmp_path)
    code, out = run_cli("plan", str(reqs), "--format", "json", "--no-sensitivity")
    assert code == 0, out
    plan = json.loads(out)
    months = plan["payments"]
    assert months[0]["capex"] == 720_000 + 115_500 + 32_000 and months[0]["other"] == 0
    assert all(m["capex"] == 70_000 and m["other"] == 3_704 for m in months[1:25])
    assert all(m["capex"] == 0 and m["other"] == 0 for m in months[25:])
    assert abs(sum(m["total"] for m in months) - plan["cost"]["tco"]) < 0.5
