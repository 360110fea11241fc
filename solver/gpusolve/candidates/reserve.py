"""Rack margins: the share of each rack's power and space that servers may not use.

Sites do not load circuits to 100% continuously (NEC 210.19/210.20: continuous load at
most 80% of the rating) and a rack needs units for its top-of-rack switch, fabric
switches, PDUs and cable management. The optimiser packs servers into the *usable*
capacity; the reserve is shown on every rack line and holds the network switches
(`optimize/fabric.py` checks they fit, else pays for more racks).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpusolve.models.catalog import ColoOffer
from gpusolve.models.params import Params


@dataclass(frozen=True)
class RackReserve:
    """One rack of an offer: what servers may use and what is kept back (W, U)."""

    usable_w: int
    usable_units: int
    reserved_w: int
    reserved_units: int


def rack_reserve(offer: ColoOffer, params: Iterable[Params] = ()) -> RackReserve:
    """The offer's own stated limits where it gives them; otherwise the rule parameters,
    the most cautious over the workloads that may use the site (one rack serves them all)."""
    chosen = list(params) or [Params()]
    contracted_w = round(offer.rack_kw * 1000)
    if offer.usable_kw is not None:
        usable_w = round(offer.usable_kw * 1000)
    else:
        fraction = min(p.rack_load_fraction for p in chosen)
        usable_w = int(contracted_w * fraction)  # down: never above the fraction
    if offer.reserved_units is not None:
        reserved_units = offer.reserved_units
    else:
        reserved_units = max(p.rack_reserved_units for p in chosen)
    reserved_units = min(reserved_units, offer.rack_units - 1)
    return RackReserve(
        usable_w=usable_w,
        usable_units=offer.rack_units - reserved_units,
        reserved_w=contracted_w - usable_w,
        reserved_units=reserved_units,
    )
