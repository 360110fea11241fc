"""Rack fill patterns: maximal fills, shape classes, caps, the blow-up guard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolve.optimize.ir import Site, Sku
from gpusolve.optimize.patterns import (
    Shape,
    TooManyPatterns,
    fill_power,
    fill_units,
    first_fit_decreasing,
    first_fit_fills,
    fits_site,
    maximal_fills,
    shape_classes,
    site_patterns,
)


def brute_force(
    shapes: list[Shape], rack_w: int, rack_units: int, caps: list[int]
) -> set[tuple[int, ...]]:
    """The definition: non-empty fills within kW, U and the caps that no other such fill
    dominates. Fits are closed downwards, so a fill is dominated exactly when one more
    server of some shape still fits; comparing every pair took minutes on four 1U shapes
    in a 42U rack (tens of thousands of fills)."""

    def fits(fill: tuple[int, ...]) -> bool:
        return (
            all(n <= cap for n, cap in zip(fill, caps, strict=True))
            and fill_power(shapes, fill) <= rack_w
            and fill_units(shapes, fill) <= rack_units
        )

    def grown(fill: tuple[int, ...], h: int) -> tuple[int, ...]:
        return (*fill[:h], fill[h] + 1, *fill[h + 1 :])

    fills: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...]) -> None:
        if len(prefix) == len(shapes):
            fills.append(prefix)
            return
        for n in range(caps[len(prefix)] + 1):
            partial = prefix + (n,) + (0,) * (len(shapes) - len(prefix) - 1)
            if not fits(partial):
                break
            extend((*prefix, n))

    extend(())
    return {
        fill
        for fill in fills
        if any(fill) and not any(fits(grown(fill, h)) for h in range(len(shapes)))
    }


shape_st = st.builds(Shape, st.integers(0, 12_000), st.integers(1, 10))


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(shape_st, min_size=1, max_size=4, unique=True),
    rack_w=st.integers(1_000, 40_000),
    rack_units=st.integers(1, 42),
    data=st.data(),
)
def test_maximal_fills_equal_the_definition(
    shapes: list[Shape], rack_w: int, rack_units: int, data: st.DataObject
) -> None:
    full = [
        min(rack_units // s.rack_units, rack_w // s.power_w if s.power_w else 99) for s in shapes
    ]
    caps = [data.draw(st.integers(0, c)) for c in full]
    for bound in (full, caps):
        got = maximal_fills(shapes, rack_w, rack_units, caps=bound)
        assert len(got) == len(set(got)), "no duplicates"
        assert set(got) == brute_force(shapes, rack_w, rack_units, bound)


def test_two_shapes_by_hand() -> None:
    # 20 kW, 42 U rack; A = 10 kW/8 U, B = 3 kW/4 U.
    # Maximal fills: 2A (20 kW, 16 U; no B fits: 23 kW), 1A+3B (19 kW, 20 U; +B = 22 kW),
    # 6B (18 kW, 24 U; +B = 21 kW). 1A+2B is not maximal (one more B fits).
    a, b = Shape(10_000, 8), Shape(3_000, 4)
    assert maximal_fills([a, b], 20_000, 42) == [(2, 0), (1, 3), (0, 6)]


def test_space_can_bind_instead_of_power() -> None:
    # 100 kW but only 12 U: three 4 U servers, whatever their power.
    assert maximal_fills([Shape(5_000, 4)], 100_000, 12) == [(3,)]


def test_caps_cut_slots_nobody_needs() -> None:
    # Demand of at most 1 server of A: fills hold at most one A and fill the rest with B.
    a, b = Shape(10_000, 8), Shape(3_000, 4)
    assert maximal_fills([a, b], 20_000, 42, caps=[1, 6]) == [(1, 3), (0, 6)]


def test_limit_raises() -> None:
    shapes = [Shape(1_000 + 37 * i, 1 + i % 3) for i in range(12)]
    with pytest.raises(TooManyPatterns):
        maximal_fills(shapes, 40_000, 42, limit=100)


def _sku(id_: str, power: int, units: int, cooling: set[str]) -> Sku:
    return Sku(id_, capex=1, power_w=power, rack_units=units, cooling=frozenset(cooling))


def _site(cooling: str = "air", rack_w: int = 20_000, units: int = 42) -> Site:
    return Site("s", "r", cooling, rack_w, units, 5, 100, 0, {})


def test_fits_site_checks_cooling_power_and_space() -> None:
    assert fits_site(_sku("a", 10_000, 8, {"air"}), _site())
    assert not fits_site(_sku("a", 10_000, 8, {"liquid"}), _site())
    assert not fits_site(_sku("a", 20_001, 8, {"air"}), _site())
    assert not fits_site(_sku("a", 1_000, 43, {"air"}), _site())


def test_equal_shapes_share_one_class() -> None:
    skus = [
        _sku("b", 3_000, 4, {"air"}),
        _sku("a", 10_000, 8, {"air"}),
        _sku("c", 3_000, 4, {"air"}),
    ]
    shapes, members = shape_classes(skus)
    assert shapes == (Shape(10_000, 8), Shape(3_000, 4))  # largest first
    assert members == (("a",), ("b", "c"))


def test_site_patterns_use_only_fitting_and_used_skus() -> None:
    skus = [
        _sku("big", 10_000, 8, {"air"}),
        _sku("small", 3_000, 4, {"air"}),
        _sku("wet", 3_000, 4, {"liquid"}),  # wrong cooling
        _sku("huge", 30_000, 8, {"air"}),  # above the rack's power
    ]
    pats = site_patterns(_site(), skus, used={"big", "small", "wet", "huge"})
    assert pats.members == (("big",), ("small",))
    assert pats.fills == ((2, 0), (1, 3), (0, 6))
    only_small = site_patterns(_site(), skus, used={"small"})
    assert only_small.fills == ((6,),)
    assert only_small.shape_of("small") == 0


def one_by_one_ffd(items: list[Shape], rack_w: int, rack_units: int) -> int:
    loads: list[tuple[int, int]] = []
    for item in sorted(items, reverse=True):
        for i, (power, units) in enumerate(loads):
            if power + item.power_w <= rack_w and units + item.rack_units <= rack_units:
                loads[i] = (power + item.power_w, units + item.rack_units)
                break
        else:
            loads.append((item.power_w, item.rack_units))
    return len(loads)


@settings(max_examples=300, deadline=None)
@given(
    counts=st.dictionaries(
        shape_st.filter(lambda s: s.power_w <= 10_000), st.integers(0, 12), max_size=4
    ),
    stop=st.none() | st.integers(0, 8),
)
def test_bulk_first_fit_equals_one_by_one(counts: dict[Shape, int], stop: int | None) -> None:
    items = [shape for shape, n in counts.items() for _ in range(n)]
    expected = one_by_one_ffd(items, 10_000, 42)
    got = first_fit_decreasing(counts, 10_000, 42, stop)
    assert got == (expected if stop is None else min(expected, stop))


def test_matchable_needs_distinct_workloads() -> None:
    from gpusolve.optimize.patterns import matchable

    users = [frozenset({0}), frozenset({0}), frozenset({0, 1}), frozenset({1})]
    assert matchable([0], users)
    assert not matchable([0, 1], users)  # both shapes only from workload 0
    assert matchable([0, 2], users)  # 2 can come from workload 1
    assert not matchable([0, 2, 3], users)  # three shapes, two workloads


def test_one_workload_fills_hold_one_shape() -> None:
    # Two shapes that both fit a 20 kW rack: unrestricted, the rack could mix them; when
    # only one workload can use either, every fill holds a single shape.
    from gpusolve.optimize.patterns import Shape, maximal_fills

    shapes = [Shape(5000, 4), Shape(3000, 2)]
    mixed = maximal_fills(shapes, 20000, 42, caps=[4, 6])
    single = maximal_fills(shapes, 20000, 42, caps=[4, 6], users=[frozenset({0})] * 2)
    assert any(all(f) for f in mixed)
    assert sorted(single) == [(0, 6), (4, 0)]
    two = maximal_fills(shapes, 20000, 42, caps=[4, 6], users=[frozenset({0}), frozenset({1})])
    assert sorted(two) == sorted(mixed)


@settings(max_examples=200, deadline=None)
@given(
    counts=st.dictionaries(
        shape_st.filter(lambda s: s.power_w <= 10_000), st.integers(0, 40), max_size=4
    ),
)
def test_first_fit_fills_are_first_fits_racks(counts: dict[Shape, int]) -> None:
    """As many racks as first-fit counts, each within kW and U, holding every server."""
    racks = first_fit_fills(counts, 10_000, 42)
    assert len(racks) == first_fit_decreasing(counts, 10_000, 42)
    for rack in racks:
        assert sum(s.power_w * n for s, n in rack.items()) <= 10_000
        assert sum(s.rack_units * n for s, n in rack.items()) <= 42
        assert all(n > 0 for n in rack.values())
    for shape, n in counts.items():
        assert sum(rack.get(shape, 0) for rack in racks) == n
