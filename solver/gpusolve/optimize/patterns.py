"""Rack fill patterns: the cutting-stock columns of the packing model.

A site offers identical racks (power `rack_w`, space `rack_units`, one cooling kind). The
model does not assign servers to individual racks (that formulation is symmetric and its
proofs are heavy-tailed, cpsat-notes §4.5); it counts racks per *fill pattern* instead, where
a pattern says how many slots of each server shape one rack holds.

Two reductions keep the column count small without losing exactness:

* Patterns are built over server *shapes* (power, rack units), not SKUs: packing only sees
  the shape, so SKUs of equal shape share slots. Thirty SKUs with eight distinct shapes give
  the pattern count of eight.
* Only *maximal* fills are kept (no other fill holds at least as many of every shape).
  Slots may stay empty (coverage is `>=`), so a dominated fill is never needed. Because both
  capacities are additive with non-negative sizes, a fill is maximal exactly when no single
  further item fits, so maximality is checked locally in O(shapes) per fill instead of by
  pairwise comparison, and the DFS below emits maximal fills directly.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpusolve.optimize.ir import Site, Sku

Fill = tuple[int, ...]  # counts aligned with a sequence of shapes


@dataclass(frozen=True, order=True)
class Shape:
    """What rack packing sees of a server."""

    power_w: int
    rack_units: int


@dataclass(frozen=True)
class SitePatterns:
    """The packing columns of one site.

    `shapes[i]` holds the SKUs in `members[i]` (sorted ids); each fill is a count per shape.
    """

    site: str
    shapes: tuple[Shape, ...]
    members: tuple[tuple[str, ...], ...]
    fills: tuple[Fill, ...]

    def shape_of(self, sku: str) -> int:
        """Index of the shape a SKU belongs to."""
        for index, ids in enumerate(self.members):
            if sku in ids:
                return index
        raise KeyError(sku)


class TooManyPatterns(Exception):
    """Pattern enumeration passed its limit; the caller should fall back to rack bins."""


def fits_site(sku: Sku, site: Site) -> bool:
    """A single server of this SKU can live in one rack of this site at all."""
    return (
        site.cooling in sku.cooling
        and sku.power_w <= site.rack_w
        and sku.rack_units <= site.rack_units
    )


def shape_classes(skus: Iterable[Sku]) -> tuple[tuple[Shape, ...], tuple[tuple[str, ...], ...]]:
    """Group SKUs by shape, in a deterministic order (largest shapes first).

    Largest first makes the DFS branch on the scarcest items at the top, which prunes most.
    """
    groups: dict[Shape, list[str]] = {}
    for sku in skus:
        groups.setdefault(Shape(sku.power_w, sku.rack_units), []).append(sku.id)
    ordered = sorted(groups, reverse=True)
    return tuple(ordered), tuple(tuple(sorted(groups[s])) for s in ordered)


def max_count(shape: Shape, power_w: int, rack_units: int) -> int:
    """How many items of a shape fit in the given free capacity."""
    if shape.rack_units <= 0:
        raise ValueError("a server occupies at least one rack unit")
    by_units = rack_units // shape.rack_units
    if shape.power_w <= 0:
        return by_units
    return min(by_units, power_w // shape.power_w)


def maximal_fills(
    shapes: Sequence[Shape],
    rack_w: int,
    rack_units: int,
    limit: int | None = None,
    caps: Sequence[int] | None = None,
) -> list[Fill]:
    """Every maximal non-empty fill of one rack, in deterministic (lexicographically
    descending) order. Raises `TooManyPatterns` once more than `limit` fills are found.

    `caps[i]` bounds the count of shape i (the most servers of that shape the site could
    ever need): slots beyond it are never used, so fills are maximal within the caps. This
    is exact and often cuts the column count by orders of magnitude on dense racks.
    """
    bounds = list(caps) if caps is not None else [max_count(s, rack_w, rack_units) for s in shapes]
    found: list[Fill] = []
    for fill in _dfs(shapes, bounds, 0, rack_w, rack_units, ()):
        found.append(fill)
        if limit is not None and len(found) > limit:
            raise TooManyPatterns(f"more than {limit} rack fill patterns")
    return found


def _dfs(
    shapes: Sequence[Shape],
    caps: Sequence[int],
    index: int,
    power_left: int,
    units_left: int,
    prefix: Fill,
) -> Iterator[Fill]:
    if not shapes:
        return
    shape = shapes[index]
    top = min(caps[index], max_count(shape, power_left, units_left))
    if index == len(shapes) - 1:
        # Any count below the maximum for the last shape leaves room for one more of it,
        # so only the maximum can be part of a maximal fill.
        fill = (*prefix, top)
        power_rest = power_left - top * shape.power_w
        units_rest = units_left - top * shape.rack_units
        if any(fill) and _nothing_fits(shapes, caps, fill, power_rest, units_rest):
            yield fill
        return
    for count in range(top, -1, -1):
        yield from _dfs(
            shapes,
            caps,
            index + 1,
            power_left - count * shape.power_w,
            units_left - count * shape.rack_units,
            (*prefix, count),
        )


def _nothing_fits(
    shapes: Sequence[Shape], caps: Sequence[int], fill: Fill, power_left: int, units_left: int
) -> bool:
    """Maximal: no shape below its cap fits once more."""
    return all(
        count >= cap or s.power_w > power_left or s.rack_units > units_left
        for s, cap, count in zip(shapes, caps, fill, strict=True)
    )


def site_patterns(
    site: Site,
    skus: Iterable[Sku],
    used: Collection[str] | None = None,
    limit: int | None = None,
    demand_ub: Mapping[str, int] | None = None,
) -> SitePatterns:
    """Maximal rack fills at one site over the SKUs that fit it.

    `used` restricts the SKUs to those some (unpruned) option can place at this site: a
    pattern slot for a SKU nobody places there is dead weight, and with many SKUs the
    column count grows combinatorially. `demand_ub` (servers per SKU the site could ever
    need) caps each shape's count per rack.
    """
    eligible = [sku for sku in skus if fits_site(sku, site) and (used is None or sku.id in used)]
    shapes, members = shape_classes(eligible)
    caps = None
    if demand_ub is not None:
        caps = [
            min(
                max_count(shape, site.rack_w, site.rack_units),
                sum(demand_ub.get(k, 0) for k in ids),
            )
            for shape, ids in zip(shapes, members, strict=True)
        ]
    fills = maximal_fills(shapes, site.rack_w, site.rack_units, limit, caps)
    return SitePatterns(site.id, shapes, members, tuple(fills))


def first_fit_decreasing(items: Sequence[Shape], rack_w: int, rack_units: int) -> int:
    """Racks used by first-fit decreasing: a cheap, valid upper bound on the fewest racks
    for these servers (and for any subset of them)."""
    loads: list[tuple[int, int]] = []
    for item in sorted(items, reverse=True):
        for i, (power, units) in enumerate(loads):
            if power + item.power_w <= rack_w and units + item.rack_units <= rack_units:
                loads[i] = (power + item.power_w, units + item.rack_units)
                break
        else:
            loads.append((item.power_w, item.rack_units))
    return len(loads)


def fill_power(shapes: Sequence[Shape], fill: Fill) -> int:
    """Power drawn by a full rack of this fill."""
    return sum(count * shape.power_w for shape, count in zip(shapes, fill, strict=True))


def fill_units(shapes: Sequence[Shape], fill: Fill) -> int:
    """Rack units taken by a full rack of this fill."""
    return sum(count * shape.rack_units for shape, count in zip(shapes, fill, strict=True))
