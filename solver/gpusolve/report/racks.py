"""Rack pictures as geometry: where each server sits in a rack, in rack units, and its kW.

Pure functions; the template draws the rectangles. Servers are stacked from the bottom of
the rack (heavy, hot boxes go low), in the order the plan lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusolve.models.colo import ColoRow
from gpusolve.models.plan import Site


@dataclass(frozen=True)
class Box:
    server: str
    bottom_u: int  # first rack unit the server occupies, counted from 0 at the bottom
    units: int
    power_kw: float
    kind: int = 0  # the server's place among the site's models: one colour per model


@dataclass(frozen=True)
class RackPicture:
    title: str
    rack_units: int | None  # None: the offer's height is unknown (a user catalogue lacks it)
    used_units: int
    rack_kw: float
    used_kw: float
    boxes: list[Box]
    contents: str = ""  # "3 x hgx-h100-8gpu, 2 x r760xa-4gpu-l40s"
    reserved_units: int = 0  # kept free of servers at the top (switches, PDUs)
    reserved_kw: float = 0.0  # kept from servers: continuous-load margin, switches

    @property
    def usable_kw(self) -> float:
        return max(self.rack_kw - self.reserved_kw, 0.0)

    @property
    def height_units(self) -> int:
        """Units the drawing spans: the rack's, or what the servers take when unknown."""
        return max(self.rack_units or 0, self.used_units, 1)


def stack(
    fill: dict[str, int],
    units: dict[str, int],
    power_kw: dict[str, float],
    kinds: dict[str, int] | None = None,
) -> list[Box]:
    """The servers of one rack, bottom up. A server whose height the catalogue does not
    give is drawn 1 U high (the picture stays honest about kW, which the plan does give)."""
    boxes: list[Box] = []
    at = 0
    for server, count in fill.items():
        height = units.get(server, 1)
        kind = (kinds or {}).get(server, 0)
        for _ in range(count):
            boxes.append(Box(server, at, height, power_kw.get(server, 0.0), kind))
            at += height
    return boxes


def _contents(fill: dict[str, int]) -> str:
    return ", ".join(f"{n} x {server}" for server, n in fill.items())


def _picture(
    offer: str,
    i: int,
    fill: dict[str, int],
    boxes: list[Box],
    rack_units: int | None,
    rack_kw: float,
    used_kw: float,
) -> RackPicture:
    """Rack `i` (from 0) of an offer, holding `fill` stacked as `boxes`."""
    return RackPicture(
        title=f"{offer} rack {i + 1}",
        rack_units=rack_units,
        used_units=sum(b.units for b in boxes),
        rack_kw=rack_kw,
        used_kw=used_kw,
        boxes=boxes,
        contents=_contents(fill),
    )


def site_racks(
    site: Site, units: dict[str, int], power_kw: dict[str, float], rack_units: int | None
) -> list[RackPicture]:
    pictures = []
    kinds = {server: i for i, server in enumerate(sorted(site.servers))}
    for i, fill in enumerate(site.fill):
        boxes = stack(fill, units, power_kw, kinds)
        kw = site.fill_kw[i] if i < len(site.fill_kw) else sum(b.power_kw for b in boxes)
        picture = _picture(site.offer, i, fill, boxes, rack_units, site.rack_kw, kw)
        pictures.append(
            replace(picture, reserved_units=site.reserved_units, reserved_kw=site.reserved_kw)
        )
    return pictures


def colo_racks(
    row: ColoRow, units: dict[str, int], power_kw: dict[str, float], rack_units: int | None
) -> list[RackPicture]:
    pictures = []
    kinds = {server: i for i, server in enumerate(sorted({s for f in row.fill for s in f}))}
    for i, fill in enumerate(row.fill):
        boxes = stack(fill, units, power_kw, kinds)
        kw = round(sum(b.power_kw for b in boxes), 2)
        pictures.append(_picture(row.offer, i, fill, boxes, rack_units, row.rack_kw, kw))
    return pictures
