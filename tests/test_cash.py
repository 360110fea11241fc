"""The cash view (explain/financing.py): each payment in the month it is paid, financing
as an annuity, upkeep beside the TCO and the NPV. Every expected figure is worked out by
hand in the comment above it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpusolve.explain.financing import (
    annuity_payment,
    cash_view,
    delivery_month,
    npv,
)
from gpusolve.load.finance import load_terms
from gpusolve.models.money import Cash, FinanceTerms
from gpusolve.models.plan import Cost, CostBreakdown, CostItem, Plan, Site, SolverInfo


def terms(**upkeep: Any) -> FinanceTerms:
    """Terms with a 30% deposit, a 12%-a-year lease and no upkeep unless given."""
    up = {
        "warranty_months": 0,
        "warranty_source": "test",
        "maintenance_per_year": 0.0,
        "maintenance_source": "test",
        "insurance_per_year": 0.0,
        "insurance_source": "test",
        "staff_month": 0.0,
        "staff_source": "test",
        "staff_per_site": 0.0,
        "servers_per_staff": 1,
        "staff_basis": "test",
        **upkeep,
    }
    return FinanceTerms.model_validate(
        {
            "discount": {"annual_rate": 0.0, "source": "test"},
            "payment_terms": {"thirty": {"deposit_at_order": 0.3, "source": "test"}},
            "default_channel": "thirty",
            "financing": {
                "lease": {
                    "annual_rate": 0.12,
                    "term_months": 12,
                    "down_payment": 0.0,
                    "buy_out": 0.0,
                    "source": "test",
                }
            },
            "upkeep": up,
        }
    )


def plan_of(items: list[CostItem], months: int, sites: list[Site] | None = None) -> Plan:
    cost = Cost(
        capex=sum(i.amount for i in items if i.kind == "servers_capex"),
        monthly_opex=0,
        tco=sum(i.amount for i in items),
        currency="CNY",
        horizon_months=months,
        breakdown=CostBreakdown(items=items),
    )
    solver = SolverInfo(status="optimal", workers=1, seed=1)
    return Plan(status="optimal", objective="min-tco", cost=cost, solver=solver, sites=sites or [])


def server(price: float, site: str = "s") -> CostItem:
    return CostItem(kind="servers_capex", subject="srv", detail="1 x srv", amount=price, site=site)


def site(servers: int) -> Site:
    return Site(
        offer="s",
        region="r",
        city="c",
        racks=1,
        servers={"srv": servers},
        power_kw=1,
        rack_kw=10,
        cooling="air",
        fill=[{"srv": servers}],
    )


def view(plan: Plan, t: FinanceTerms, lead_weeks: float = 0.0, **kw: Any) -> Cash:
    cash = cash_view(plan, t, {"srv": lead_weeks}, {}, **kw)
    assert cash is not None
    return cash


def test_a_30_month_rack_contract_is_paid_monthly() -> None:
    # 30 months x 10,000 a rack-month: 10,000 in each of the 30 months, not 300,000 at once.
    rent = CostItem(
        kind="rack_rent", subject="s", detail="1 rack(s) x 10,000/month", amount=300_000
    )
    cash = view(plan_of([rent], 30), terms())
    assert [m.running for m in cash.months] == [10_000.0] * 30
    assert cash.nominal == cash.tco == 300_000


def test_a_30_percent_deposit_and_delivery_in_week_20_pay_in_two_instalments() -> None:
    # Week 20 ends on day 140; 140 / 30.4375 days a month = 4.6: the 5th month.
    assert delivery_month(20) == 5
    assert delivery_month(0) == 1
    cash = view(plan_of([server(1_000_000)], 12), terms(), lead_weeks=20)
    paid = [m.purchases for m in cash.months]
    assert paid == [300_000, 0, 0, 0, 700_000] + [0] * 7
    assert cash.financed[0].delivery_month == 5 and cash.financed[0].how == "cash"


def test_a_lease_pays_the_annuity_formula() -> None:
    # 1,000,000 at 12% a year (1% a month) over 12 months, nothing down, no buy-out:
    # 1e6 x 0.01 / (1 - 1.01^-12) = 1e6 x 0.01 / (1 - 0.887449) = 88,848.79 a month.
    assert annuity_payment(1_000_000, 0.12, 12) == pytest.approx(88_848.79, abs=0.01)
    # 20% down and a 1% buy-out: (800,000 - 10,000 / 1.01^12) x 0.0888488 = 70,290.54.
    assert annuity_payment(800_000, 0.12, 12, 10_000) == pytest.approx(70_290.54, abs=0.01)
    # At 0% the annuity is the amount over the months.
    assert annuity_payment(1_200, 0.0, 12) == 100
    # In the cash view: delivered in month 1, paid in arrears in months 2-13 (past a
    # 12-month horizon), whole units; the interest is what it adds to the price.
    cash = view(plan_of([server(1_000_000)], 12), terms(), how="lease")
    paid = [m.financing for m in cash.months]
    assert len(paid) == 13
    assert paid == [0] + [88_849] * 12
    assert cash.interest == 12 * 88_849 - 1_000_000 == 66_188
    assert cash.nominal == cash.tco + cash.interest


def test_npv_at_zero_is_the_nominal_tco_and_discounts_by_whole_years() -> None:
    items = [
        server(1_000_000),
        CostItem(kind="rack_rent", subject="s", detail="x", amount=240_000, site="s"),
        CostItem(kind="energy", subject="s", detail="x", amount=48_000, site="s"),
    ]
    cash = view(plan_of(items, 24), terms(), discount_rate=0.0)
    assert cash.npv == cash.nominal == cash.tco == 1_288_000
    # 100 now and 112 twelve months later at 12% a year: 100 + 112 / 1.12 = 200.
    assert npv([100] + [0] * 11 + [112], 0.12) == pytest.approx(200)


def test_the_cheapest_financing_depends_on_the_discount_rate() -> None:
    plan = plan_of([server(1_000_000)], 24)
    # At 0% money now is worth money later: the lease's interest makes it dearer.
    assert view(plan, terms(), how="cheapest", discount_rate=0.0).financed[0].how == "cash"
    # At 30% a year, paying 12% over a year beats paying (most of it) at once.
    assert view(plan, terms(), how="cheapest", discount_rate=0.30).financed[0].how == "lease"


def test_upkeep_after_the_warranty_insurance_and_staff_stand_beside_the_tco() -> None:
    up = terms(
        warranty_months=12,
        maintenance_per_year=0.12,
        insurance_per_year=0.01,
        staff_month=20_000,
        staff_per_site=0.5,
        servers_per_staff=10,
    )
    cash = view(plan_of([server(1_200_000)], 24, [site(10)]), up)
    # Maintenance 12% of 1.2M a year = 12,000 a month from month 13 (after a 12-month
    # warranty from delivery in month 1) to 24; insurance 1% = 1,000 a month throughout;
    # staff (0.5 per site + 10 servers / 10) x 20,000 = 30,000 a month.
    assert [m.upkeep for m in cash.months] == [31_000.0] * 12 + [43_000.0] * 12
    assert cash.upkeep == 12 * 12_000 + 24 * 1_000 + 24 * 30_000 == 888_000
    assert cash.tco == 1_200_000 and cash.nominal == 2_088_000


def test_the_shipped_terms_load_and_name_their_sources() -> None:
    shipped = load_terms()
    assert shipped.default_channel in shipped.payment_terms
    assert {"lease", "instalments"} <= set(shipped.financing)
    texts = [p.source for p in shipped.payment_terms.values()]
    texts += [f.source for f in shipped.financing.values()]
    up = shipped.upkeep
    texts += [up.warranty_source, up.maintenance_source, up.insurance_source, up.staff_source]
    for text in texts:  # every figure sourced, or labelled a guess
        assert "estimate" in text or "illustrative" in text or "PBoC" in text, text
    assert "Loan Prime Rate" in shipped.discount.source


def test_a_schedules_rack_contract_is_paid_monthly_over_its_term() -> None:
    from gpusolve.explain.financing import rack_months

    note = "rack rent: 1 rack(s) contracted from month 27 x 9,000/month x 9 months"
    # Months 28-36 (month 0 is the schedule's start), 9,000 each: 81,000 in all.
    assert rack_months(note, 81_000, 27, 3) == {m: 9_000.0 for m in range(28, 37)}
    # A line without a stated term: spread over its period's 3 months, whole units.
    assert rack_months("rack rent not split by site", 1_000, 3, 3) == {4: 333, 5: 333, 6: 334}


def test_the_cash_csv_adds_up_to_the_json_and_discounts_a_year_by_the_rate(
    gpusolve: Any,
) -> None:
    import csv
    import io

    from tests.support.shipped import ROOT

    chat = str(ROOT / "examples" / "chat-day-lora-night.yaml")
    data = json.loads(gpusolve("plan", "-q", chat, "--format", "json").out)
    text = gpusolve("plan", "-q", chat, "--cash", "--format", "csv").out
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    cash = data["cash"]
    assert header[-1] == "present_value_at_3.00%_CNY" and len(body) == len(cash["months"])
    assert sum(float(r[5]) for r in body) == cash["nominal"]
    assert float(body[-1][6]) == cash["nominal"]  # the cumulative column ends at it
    # Month 13 is a year after month 1: its total at 3% a year is total / 1.03.
    assert float(body[12][7]) == pytest.approx(float(body[12][5]) / 1.03, abs=0.01)
    assert sum(float(r[7]) for r in body) == pytest.approx(cash["npv"], abs=0.01 * len(body))
    assert gpusolve("plan", "-q", chat, "--cash").code == 2  # --cash is a CSV
