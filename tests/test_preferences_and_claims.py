"""Issue 35: preferences never outweigh the money, and the plan's claims are true.

- A soft rule charges a share of the cost of the option that misses it, and nothing at
  all where no allowed option of the workload meets it (the plan names it, with why).
- A constraint is called binding only when it is tight: a plan that buys nothing is not
  at its capex cap; one server in a rack is not bound by the rack's power.
- `budget.total_max` caps capex + spend over the horizon.
- A city in `regions:` keeps its province's cloud offers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from tests.factories.files import rule_file, write_reqs
from tests.factories.instances import ONE, instance, owned, rented, site, sku
from tests.support.shipped import ROOT, example

from gpusolve.candidates.generate import build_candidates
from gpusolve.models.regions import resolve
from gpusolve.optimize.ir import Costs, Solution
from gpusolve.optimize.readout import binding
from gpusolve.optimize.solve import solve
from gpusolve.plan.inputs import prepare_run


def _candidates(
    tmp_path: Path, data: dict[str, Any], *rules: dict[str, Any], catalogs: tuple[Path, ...] = ()
) -> Any:
    paths = [rule_file(tmp_path, *rules)] if rules else []
    run = prepare_run(write_reqs(tmp_path, data), list(catalogs), paths)
    cand = build_candidates(run.reqs, run.catalog, run.policies)
    cand.catalog = run.catalog  # for the test's own look-ups
    return cand


def _charged_rules(cand: Any) -> set[str]:
    rules = {c.rule for m in cand.meta.values() for c in m.charges}
    rules |= {c.rule for m in cand.meta.values() for cs in m.site_charges.values() for c in cs}
    return rules


def test_a_preference_no_allowed_option_meets_charges_nothing(tmp_path: Path) -> None:
    # No card of the catalogue has 500 GB: even a money penalty of a million is dropped.
    never = {
        "id": "huge-memory",
        "source": "H23",
        "title": "Cards of 500 GB",
        "when": "true",
        "prefer": {"card": {"expr": "card.memory_gb >= 500", "penalty": 1_000_000}},
    }
    cand = _candidates(tmp_path, example("finetune-7b-deadline.yaml"), never)
    assert "huge-memory" not in _charged_rules(cand)
    for o in [*cand.instance.owned, *cand.instance.cloud]:
        assert o.penalty == sum(c.amount for c in cand.meta[o.key].charges)
    [unmet] = [u for u in cand.unmet if u.rule == "huge-memory"]
    assert unmet.workload == "ft-7b" and unmet.judged == "card"
    assert unmet.why == "no card in the catalogue meets it"


def test_a_preference_some_allowed_option_meets_is_charged_as_its_share(tmp_path: Path) -> None:
    # 96 GB or more: the H20 rentals meet it, the 80 GB ones miss it and pay 10% of the rental.
    some = {
        "id": "big-memory",
        "source": "H23",
        "title": "Cards of 96 GB",
        "when": "true",
        "prefer": {"card": {"expr": "card.memory_gb >= 96", "share": 0.1}},
    }
    cand = _candidates(tmp_path, example("finetune-7b-deadline.yaml"), some)
    assert not [u for u in cand.unmet if u.rule == "big-memory"]
    missed = 0
    for c in cand.instance.cloud:
        card = cand.meta[c.key].card
        charge = [x for x in cand.meta[c.key].charges if x.rule == "big-memory"]
        memory = cand.catalog.cards[card].memory_gb
        assert bool(charge) == (memory < 96), c.key
        if charge:
            missed += 1
            assert charge[0].amount == round(0.1 * c.cost_total)
    assert missed


def test_h41_largest_memory_is_not_charged_when_the_market_excludes_every_such_card(
    tmp_path: Path,
) -> None:
    """A 14B continued pretraining in market cn where every card of 120 GB or more is
    restricted (the shipped Ascend 910C patched so, as a legal team might): H41's "largest
    memory" preference cannot be met and charges nothing (it charged 200,000 CNY against a
    112,128 TCO before)."""
    memo = tmp_path / "legal.yaml"
    restricted = {"status": "restricted", "as_of": "2026-12"}
    memo.write_text(
        yaml.safe_dump({"patch": [{"id": "ascend-910c", "export_cn": restricted}]}),
        encoding="utf-8",
    )
    data = example("pretrain-70b-infiniband.yaml")
    data["workloads"][0]["model"] = {"params_b": 14, "layers": 40, "hidden": 5120}
    cand = _candidates(tmp_path, data, catalogs=(ROOT / "catalog", memo))
    assert "h41-pretrain-10b-multi-node" not in _charged_rules(cand)
    [unmet] = [u for u in cand.unmet if u.rule == "h41-pretrain-10b-multi-node"]
    assert "restricted for China" in unmet.why


def test_h42_steady_buy_does_not_charge_a_monthly_eight_hour_run(tmp_path: Path) -> None:
    """24 runs of ~8 h over 24 months are ~1% use: renting them is no miss of H42."""
    cand = _candidates(tmp_path, example("finetune-7b-deadline.yaml"))
    assert "h42-steady-training-buy" not in _charged_rules(cand)


# --------------------------------------------------------------------------- binding


def _solution(servers: dict[tuple[str, str], int], racks: dict[Any, int], capex: int) -> Solution:
    costs = Costs(capex=capex, rack_rent=0, energy=0, bandwidth=0, cloud=0, penalties=0)
    return Solution(status="optimal", choices=(), servers=servers, racks=racks, costs=costs)


def test_one_server_is_not_bound_by_rack_power() -> None:
    # A 10 kW / 8 U server in a 16 kW rack: no room for a second by power, but one rack is
    # all the site needs whatever the power: nothing binds.
    ten = sku("ten", 1000, 10_000, 8)
    inst = instance(("w",), (), sites=(site(rack_w=16_000, energy={"ten": 1}),), skus=(ten,))
    one = _solution({("ten", "sz"): 1}, {("sz", (("ten", 1),)): 1}, 1000)
    assert binding(inst, one) == ()
    # Three of them need three racks by power; by space one would hold them: power binds.
    three = _solution({("ten", "sz"): 3}, {("sz", (("ten", 1),)): 3}, 3000)
    assert binding(inst, three) == ("rack_power:sz",)


def test_a_plan_that_buys_nothing_is_not_at_its_capex_cap() -> None:
    inst = instance(("w",), (), capex_max=900)  # below the cheapest server (1000)
    assert binding(inst, _solution({}, {}, 0)) == ()
    at_cap = instance(("w",), (), capex_max=1500)
    assert binding(at_cap, _solution({("h100", "sz"): 1}, {("sz", (("h100", 1),)): 1}, 1000)) == (
        "capex",
    )


def test_total_budget_caps_capex_plus_spend() -> None:
    # Buying (1000 + 12 x (5 rent + 10 energy) = 1180) is cheaper than renting (1500) over
    # the horizon, but a total cap of 1100 leaves neither; a cap of 1200 leaves the purchase.
    opts = (owned("buy", "w", 1),)
    cloud = (rented("rent", "w", 1, 1500),)
    assert solve(instance(("w",), opts, cloud, total_max=1100), ONE).status == "infeasible"
    sol = solve(instance(("w",), opts, cloud, total_max=1200), ONE)
    assert sol.status == "optimal" and sol.costs is not None
    assert sol.costs.capex + sol.costs.rack_rent + sol.costs.energy == 1180
    assert binding(instance(("w",), opts, cloud, total_max=1200), sol) == ("total",)


def test_total_max_in_the_requirements_reaches_the_plan(gpusolve, tmp_path: Path) -> None:
    data = example("finetune-7b-deadline.yaml")
    data["budget"] = {"total_max": 10_000}  # the plan rents for 17,981
    result = gpusolve("plan", "-q", str(write_reqs(tmp_path, data)), "--format", "json")
    assert result.code == 1, result.err
    plan = json.loads(result.out)
    conflicting = " ".join(c["detail"] for c in plan["infeasibility"]["conflicting"])
    assert "total spend cap of 10,000 CNY" in conflicting


# --------------------------------------------------------------------------- regions


def test_a_city_matches_its_offers_and_its_provinces_clouds() -> None:
    for term in ("suzhou", "苏州"):
        place = resolve(term)
        assert place is not None
        assert place.matches("jiangsu-south", "Suzhou")
        assert not place.matches("jiangsu-south", "Nanjing")  # another city's racks
        assert place.matches("jiangsu-north", "")  # a Jiangsu cloud region
        assert not place.matches("shanghai", "")  # another province's cloud
