"""Rack margins: servers never fill a rack beyond what its reserve leaves (issue 24, part 3).

Every shipped example is planned twice, as shipped and on owned hardware only (no cloud
offers, so every example puts servers in racks), the fleet example goes through `colo`, and
the scale examples plan on their own catalogues: in each, every rack's servers stay within
the usable kW and U, and the reserve shown is the rule's (80% continuous load, 4U) unless
the offer states its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.factories.files import write_reqs
from tests.support.example_plans import plan_json
from tests.support.shipped import CARDS, COLO, EXAMPLES, ROOT, SERVERS, example, shipped

from gpusolve.candidates.reserve import rack_reserve
from gpusolve.load import load_catalog
from gpusolve.models.catalog import ColoOffer
from gpusolve.models.params import Params

NETWORK = ROOT / "catalog" / "network.yaml"
SCALE = ROOT / "examples" / "scale"
FLEETS = sorted((ROOT / "examples" / "fleets").glob("*.yaml"))


def _offer(**changes: Any) -> ColoOffer:
    data = next(o for o in shipped("colo_offers") if o["rack_kw"] == 40)
    return ColoOffer.model_validate({**data, **changes})


def test_default_reserve_is_a_fifth_of_the_kw_and_four_units() -> None:
    offer = _offer()
    reserve = rack_reserve(offer)
    assert reserve.usable_w == 32_000 and reserve.reserved_w == 8_000
    assert reserve.reserved_units == 4
    assert reserve.usable_units == offer.rack_units - 4


def test_an_offer_that_states_its_limit_overrides_the_rule() -> None:
    reserve = rack_reserve(_offer(usable_kw=36, reserved_units=2))
    assert (reserve.usable_w, reserve.reserved_w, reserve.reserved_units) == (36_000, 4_000, 2)


def test_the_most_cautious_workload_rule_sets_the_reserve() -> None:
    params = [Params(), Params(rack_load_fraction=0.7, rack_reserved_units=3)]
    reserve = rack_reserve(_offer(), params)
    assert reserve.usable_w == 28_000 and reserve.reserved_units == 4


def test_an_offer_cannot_allow_more_than_it_contracts() -> None:
    with pytest.raises(ValueError, match="usable_kw"):
        _offer(usable_kw=41)
    with pytest.raises(ValueError, match="reserved_units"):
        _offer(reserved_units=60)


def _units() -> dict[str, int]:
    units: dict[str, int] = {}
    for paths in ([SCALE / "large-site-a100.yaml"], [SCALE / "large-site-h800.yaml"], None):
        servers = load_catalog(paths).catalog.servers.values()
        units.update({s.id: s.rack_units for s in servers})
    return units


def _check_sites(sites: list[dict[str, Any]], offers: dict[str, ColoOffer]) -> int:
    """Every rack within its usable kW and U; returns how many racks were checked."""
    units = _units()
    checked = 0
    for site in sites:
        offer = offers[site["offer"]]
        expected = rack_reserve(offer)
        assert site["reserved_kw"] == pytest.approx(expected.reserved_w / 1000)
        assert site["reserved_units"] == expected.reserved_units
        usable_kw = site["rack_kw"] - site["reserved_kw"]
        for fill, kw in zip(site["fill"], site["fill_kw"], strict=True):
            assert kw <= usable_kw + 1e-9, (site["offer"], fill, kw)
            used_u = sum(units[k] * n for k, n in fill.items())
            assert used_u <= offer.rack_units - site["reserved_units"], (site["offer"], fill)
            checked += 1
    return checked


def _plan(gpusolve: Any, *args: str) -> dict[str, Any]:
    result = gpusolve("plan", "-q", *args, "--format", "json")
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


@pytest.mark.parametrize("owned_only", [False, True], ids=["shipped", "owned-only"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_example_rack_is_filled_beyond_its_reserve(
    gpusolve: Any, path: Path, owned_only: bool, tmp_path: Path
) -> None:
    offers = load_catalog().catalog.colo_offers
    if not owned_only:
        code, out = plan_json(path)
        assert code == 0, out
        _check_sites(json.loads(out)["sites"], offers)
        return
    # Bought, anywhere: no cloud offer, no budget cap and market global, so that every
    # example needs racks whatever the export rules allow in market cn.
    data = example(path.name)
    data.pop("budget", None)
    data["market"] = "global"
    args = [str(write_reqs(tmp_path, data)), "--no-default-catalog"]
    for f in (CARDS, SERVERS, COLO, NETWORK):
        args += ["--catalog", str(f)]
    plan = _plan(gpusolve, *args)
    assert _check_sites(plan["sites"], offers) >= 1  # the check saw racks


@pytest.mark.parametrize(
    ("reqs", "catalog"),
    [
        ("pretrain-65b-21-days.yaml", "large-site-a100.yaml"),
        ("moe-deepseek-v3-class.yaml", "large-site-h800.yaml"),
    ],
)
def test_no_scale_example_rack_is_filled_beyond_its_reserve(
    gpusolve: Any, reqs: str, catalog: str
) -> None:
    cat = str(SCALE / catalog)
    plan = _plan(gpusolve, str(SCALE / reqs), "--no-default-catalog", "--catalog", cat)
    offers = load_catalog([SCALE / catalog]).catalog.colo_offers
    assert _check_sites(plan["sites"], offers) >= 1


@pytest.mark.parametrize("path", FLEETS, ids=lambda p: p.stem)
def test_no_fleet_example_rack_is_filled_beyond_its_reserve(gpusolve: Any, path: Path) -> None:
    result = gpusolve("colo", str(path), "--format", "json")
    assert result.code == 0, result.err + result.out
    report = json.loads(result.out)
    catalog = load_catalog().catalog
    feasible = [r for r in report["offers"] if r["feasible"]]
    assert feasible
    for row in feasible:
        offer = catalog.colo_offers[row["offer"]]
        reserve = rack_reserve(offer)
        assert row["reserved_kw"] == pytest.approx(reserve.reserved_w / 1000)
        for fill in row["fill"]:
            kw = sum(catalog.servers[k].power_kw * n for k, n in fill.items())
            units = sum(catalog.servers[k].rack_units * n for k, n in fill.items())
            assert kw <= reserve.usable_w / 1000 + 1e-9, (row["offer"], fill)
            assert units <= reserve.usable_units, (row["offer"], fill)
