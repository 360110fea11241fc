"""Which exact rack model a site gets (`packing.add_packing`): fill patterns, or one Boolean
and a count per shape for each rack the site can need when that is the smaller model."""

from __future__ import annotations

from tests.factories.instances import ONE
from tests.support.optimize_reference import evaluate_all, optimum

from gpusolve.optimize.ir import Instance, OwnedOption, Placement, Site, Sku
from gpusolve.optimize.model import build
from gpusolve.optimize.patterns import shape_classes, site_patterns
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

# Six server shapes (kW, U), all of which fit a 40 kW, 38 U liquid rack.
SHAPES = ((8600, 8), (5800, 4), (5100, 4), (4900, 6), (3000, 2), (2500, 2))
SKUS = {
    f"k{i}": Sku(
        f"k{i}", capex=100_000 + 7_000 * i, power_w=w, rack_units=u, cooling=frozenset({"liquid"})
    )
    for i, (w, u) in enumerate(SHAPES)
}


def _site(racks: int) -> Site:
    return Site(
        "big",
        "r",
        "liquid",
        rack_w=40_000,
        rack_units=38,
        racks_available=racks,
        rack_rent_month=9_000,
        bandwidth_month=0,
        energy_month={k: 500 for k in SKUS},
    )


def _instance(racks: int, servers: int = 2) -> Instance:
    workloads = ("a", "b", "c")
    owned = tuple(
        OwnedOption(f"{w}-{k}", w, k, servers + i % 2, "always", (Placement("big"),))
        for w in workloads
        for i, k in enumerate(SKUS)
    )
    return Instance(
        workloads=workloads,
        skus=SKUS,
        sites={"big": _site(racks)},
        owned=owned,
        cloud=(),
        horizon_months=12,
    )


def test_few_large_racks_take_the_per_rack_model() -> None:
    instance = _instance(racks=2)
    site = instance.sites["big"]
    shapes, _ = shape_classes(SKUS.values())
    users = {k: {"a", "b", "c"} for k in SKUS}
    fills = site_patterns(site, SKUS.values(), set(SKUS), None, None, users).fills
    # Two racks of 6 shapes: 2 x (1 + 6) = 14 variables against every mix of up to three
    # shapes (three workloads) that leaves no room for one more server.
    assert 2 * (1 + len(shapes)) < len(fills)
    pack = build(instance).packing["big"]
    assert len(pack.bins) == 2 and not pack.patterns.fills


def test_the_per_rack_model_keeps_the_optimum() -> None:
    instance = _instance(racks=2)
    solution = solve(instance, ONE)
    expected = optimum(instance, evaluate_all(instance))
    assert expected is not None and solution.status == "optimal"
    assert solution.objective_value == expected[0]
    assert check(instance, solution) == []


def test_many_racks_keep_the_fill_patterns() -> None:
    # Forty servers an option: 3 x 40 of one shape alone take 3 x 40 / 4 = 30 racks or
    # more (8.6 kW servers, four to a 40 kW rack), so the per-rack model has hundreds of
    # variables per shape, more than the fills.
    instance = _instance(racks=400, servers=40)
    pack = build(instance).packing["big"]
    assert pack.total_ub * (1 + len(SHAPES)) > len(pack.patterns.fills) > 0
    assert not pack.bins
