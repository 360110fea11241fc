"""Rack fill patterns: the cutting-stock columns of the packing model.

A site offers identical racks (power `rack_w`, space `rack_units`, one cooling kind). The
model does not assign servers to individual racks (that formulation is symmetric and its
proofs are heavy-tailed, cpsat-notes §4.5); it counts racks per *fill pattern* instead, where
a pattern says how many slots of each server shape one rack holds.

Reductions that keep the column count small without losing exactness:

* Patterns are built over server *shapes* (power, rack units), not SKUs: packing only sees
  the shape, so SKUs of equal shape share slots (thirty SKUs of eight shapes cost the
  columns of eight).
* Only SKUs that fit the site (cooling, one server within the rack's kW and U) and that
  some option can place there take part.
* A shape's count per rack is capped by the most servers of that shape the site could ever
  need: slots beyond it are never used.
* Each workload runs on one SKU, so two shapes can only share a rack when two different
  workloads put them there: a fill's set of shapes must be matchable to distinct workloads
  that can use each shape at this site (`users`). With one workload at a site every rack
  holds one shape. This removes columns no plan could use (benchmarks/README.md,
  "Why the model is built as it is") and loses no plan: any real rack's shapes come from distinct
  workloads, and its fill is dominated by a maximal fill of this restricted family.
* Only *maximal* fills are kept (no other fill holds at least as many of every shape).
  Slots may stay empty (coverage is `>=`), so a dominated fill is never needed. Because both
  capacities are additive with non-negative sizes, a fill is maximal exactly when no single
  further item fits, so maximality is checked locally in O(shapes) per fill instead of by
  pairwise comparison, and the DFS below emits maximal fills directly (no product over all
  count ranges is ever materialised).

Dense racks with many small shapes still have hundreds of thousands of maximal fills;
enumeration stops at a limit (`TooManyPatterns`) and the model falls back to per-rack
variables for that site.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpusolve.optimize.ir import Site, Sku

Fill = tuple[int, ...]  # counts aligned with a sequence of shapes
_NODES_PER_PATTERN = 10  # search budget per allowed pattern (see `maximal_fills`)


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


def racks_alone(sku: Sku, site: Site, servers: int) -> int | None:
    """Racks `servers` of one SKU need at a site with nothing else there: exact, since
    identical servers pack homogeneously. None when not one fits in a rack."""
    per_rack = max_count(Shape(sku.power_w, sku.rack_units), site.rack_w, site.rack_units)
    return -(-servers // per_rack) if per_rack else None


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


def matchable(chosen: Sequence[int], users: Sequence[frozenset[int]]) -> bool:
    """Whether each chosen shape can be given its own workload (bipartite matching)."""
    owner: dict[int, int] = {}

    def assign(shape: int, seen: set[int]) -> bool:
        for w in users[shape]:
            if w in seen:
                continue
            seen.add(w)
            if w not in owner or assign(owner[w], seen):
                owner[w] = shape
                return True
        return False

    return all(assign(shape, set()) for shape in chosen)


def maximal_fills(
    shapes: Sequence[Shape],
    rack_w: int,
    rack_units: int,
    limit: int | None = None,
    caps: Sequence[int] | None = None,
    users: Sequence[frozenset[int]] | None = None,
) -> list[Fill]:
    """Every maximal non-empty fill of one rack, in deterministic (lexicographically
    descending) order.

    `caps[i]` bounds the count of shape i (the most servers of that shape the site could
    ever need): slots beyond it are never used, so fills are maximal within the caps. This
    is exact and often cuts the column count by orders of magnitude on dense racks.

    Raises `TooManyPatterns` once more than `limit` fills are found, or once the search has
    visited `_NODES_PER_PATTERN * limit` partial fills: on dense racks most leaves are not
    maximal, and without a node budget merely discovering that a site is over the limit
    took seconds per site at 40 x 120 x 40.

    `users[i]`, when given, are the workloads (as ints) that can place shape i here; a fill
    then only mixes shapes that distinct workloads can supply, and is maximal within that
    family.
    """
    bounds = list(caps) if caps is not None else [max_count(s, rack_w, rack_units) for s in shapes]
    search = _Search(shapes, bounds, limit, users)
    if shapes:
        search.dfs(0, rack_w, rack_units, ())
    return search.found


class _Search:
    """Depth-first enumeration of maximal fills, one shape per level. Plain recursion
    appending to a list: a generator chain would pass every fill up through one frame per
    shape, which dominated build time on sites with dozens of shapes."""

    def __init__(
        self,
        shapes: Sequence[Shape],
        caps: Sequence[int],
        limit: int | None,
        users: Sequence[frozenset[int]] | None = None,
    ) -> None:
        self.shapes = shapes
        self.caps = caps
        self.limit = limit
        self.users = users
        self.budget = None if limit is None else _NODES_PER_PATTERN * max(limit, 1)
        self.nodes = 0
        self.found: list[Fill] = []
        # Maximality tests try the smallest shapes first (they are the ones that still
        # fit), after a constant-time test against the smallest power and space.
        self.smallest_first = sorted(range(len(shapes)), key=lambda i: shapes[i])
        self.min_power = min((s.power_w for s in shapes), default=0)
        self.min_units = min((s.rack_units for s in shapes), default=0)

    def can_mix(self, chosen: Sequence[int]) -> bool:
        return self.users is None or len(chosen) <= 1 or matchable(chosen, self.users)

    def nothing_fits(self, fill: Fill, power_left: int, units_left: int) -> bool:
        """Maximal: no shape below its cap fits once more (and may join this rack)."""
        if power_left < self.min_power or units_left < self.min_units:
            return True
        chosen = [i for i, n in enumerate(fill) if n]
        for i in self.smallest_first:
            shape = self.shapes[i]
            if (
                fill[i] < self.caps[i]
                and shape.power_w <= power_left
                and shape.rack_units <= units_left
                and (fill[i] > 0 or self.can_mix([*chosen, i]))
            ):
                return False
        return True

    def dfs(self, index: int, power_left: int, units_left: int, prefix: Fill) -> None:
        self.nodes += 1
        if self.budget is not None and self.nodes > self.budget:
            raise TooManyPatterns(f"more than {self.budget} partial fills searched")
        shape = self.shapes[index]
        top = min(self.caps[index], max_count(shape, power_left, units_left))
        if top and self.users is not None:
            chosen = [i for i, n in enumerate(prefix) if n]
            if chosen and not self.can_mix([*chosen, index]):
                top = 0
        if index < len(self.shapes) - 1:
            for count in range(top, -1, -1):
                self.dfs(
                    index + 1,
                    power_left - count * shape.power_w,
                    units_left - count * shape.rack_units,
                    (*prefix, count),
                )
            return
        # Any count below the maximum for the last shape leaves room for one more of it,
        # so only the maximum can be part of a maximal fill.
        fill = (*prefix, top)
        power_rest = power_left - top * shape.power_w
        units_rest = units_left - top * shape.rack_units
        if any(fill) and self.nothing_fits(fill, power_rest, units_rest):
            self.found.append(fill)
            if self.limit is not None and len(self.found) > self.limit:
                raise TooManyPatterns(f"more than {self.limit} rack fill patterns")


def site_patterns(
    site: Site,
    skus: Iterable[Sku],
    used: Collection[str] | None = None,
    limit: int | None = None,
    demand_ub: Mapping[str, int] | None = None,
    users: Mapping[str, Collection[str]] | None = None,
) -> SitePatterns:
    """Maximal rack fills at one site over the SKUs that fit it.

    `used` restricts the SKUs to those some (unpruned) option can place at this site: a
    pattern slot for a SKU nobody places there is dead weight, and with many SKUs the
    column count grows combinatorially. `demand_ub` (servers per SKU the site could ever
    need) caps each shape's count per rack. `users` (workloads that can place each SKU
    here) restricts fills to shapes that distinct workloads can supply.
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
    shape_users = None
    if users is not None:
        ids = {w: i for i, w in enumerate(sorted({w for ws in users.values() for w in ws}))}
        shape_users = [
            frozenset(ids[w] for k in skus_of for w in users.get(k, ())) for skus_of in members
        ]
    fills = maximal_fills(shapes, site.rack_w, site.rack_units, limit, caps, shape_users)
    return SitePatterns(site.id, shapes, members, tuple(fills))


def first_fit_decreasing(
    counts: Mapping[Shape, int], rack_w: int, rack_units: int, stop_at: int | None = None
) -> int:
    """Racks used by first-fit decreasing for `counts` servers per shape: a cheap, valid
    upper bound on the fewest racks for them (and for any subset of them). Returns
    `stop_at` as soon as that many racks are open (callers cap the bound there anyway)."""
    return len(_first_fit(counts, rack_w, rack_units, stop_at))


def first_fit_fills(
    counts: Mapping[Shape, int], rack_w: int, rack_units: int
) -> list[dict[Shape, int]]:
    """First-fit decreasing's racks: the servers of each shape in each rack."""
    return [rack.servers for rack in _first_fit(counts, rack_w, rack_units, None)]


@dataclass
class _Load:
    power_w: int
    units: int
    servers: dict[Shape, int]


def _first_fit(
    counts: Mapping[Shape, int], rack_w: int, rack_units: int, stop_at: int | None
) -> list[_Load]:
    """Identical servers placed one by one go to the first rack with room until it is full
    for them (loads only grow), so each open rack is filled in bulk and the rest open
    homogeneous racks: the one-by-one result in O(shapes x racks), not O(servers x racks)
    (the largest demand at a site runs to hundreds of thousands of servers at 40 x 120 x 40).
    """
    loads: list[_Load] = []
    for shape in sorted(counts, reverse=True):
        left = counts[shape]
        for load in loads:
            if left == 0:
                break
            take = min(left, max_count(shape, rack_w - load.power_w, rack_units - load.units))
            if take:
                load.power_w += take * shape.power_w
                load.units += take * shape.rack_units
                load.servers[shape] = take
                left -= take
        per_rack = max_count(shape, rack_w, rack_units)
        while left > 0:
            if stop_at is not None and len(loads) >= stop_at:
                return loads
            take = min(left, per_rack)
            loads.append(_Load(take * shape.power_w, take * shape.rack_units, {shape: take}))
            left -= take
    return loads


def fill_power(shapes: Sequence[Shape], fill: Fill) -> int:
    """Power drawn by a full rack of this fill."""
    return sum(count * shape.power_w for shape, count in zip(shapes, fill, strict=True))


def fill_units(shapes: Sequence[Shape], fill: Fill) -> int:
    """Rack units taken by a full rack of this fill."""
    return sum(count * shape.rack_units for shape, count in zip(shapes, fill, strict=True))
