"""Delivery lead times and server moves in a single plan: a server works only from its
delivery, or, when the team already owns it at another site, from the end of its move.

A plan starts at month 0 and buys at month 0; a server of a model with a lead time of L
weeks (the catalogue's `lead_time_weeks`, a source or a labelled estimate per vendor
channel) is delivered L weeks later. Until then the workload placed on it runs on its
cheapest rental (of the options that break no requirement), pro rata over the horizon:
`OwnedOption.bridge` = that rental's whole cost x min(1, L weeks in months / horizon). A
workload with no rental at all starts at delivery instead (its deployment says so).

Servers the team already owns wait for no delivery, but they may have to move. The model
puts owned servers in service (at home or moved) before it buys one of the same model
(`optimize/inventory.py`), so a placement at site t of an option needing n servers of a
held model waits for:
- nothing, when the stock at t holds n;
- the move, when the stock at t and the movable lines elsewhere hold n: the longest
  `move_downtime_days` of the lines taken, fewest days first;
- the purchase of the rest, when they do not: the longer of that and the lead time.
The wait is bridged like a delivery, per site: `Placement.bridge`.

A schedule uses the same figure within a period (`optimize/phased/model.py`): a purchase
delivered before its period ends works in that period, its workloads bridged until then;
owned servers move at the start, so their downtime is bridged in the first period.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from gpusolve.models.periods import WEEKS_PER_MONTH
from gpusolve.optimize import ir


def lead_months(lead_time_weeks: float) -> float:
    return lead_time_weeks / WEEKS_PER_MONTH


def bridge_cost(cheapest_rental: int, lead_time_weeks: float, horizon_months: int) -> int:
    """The cheapest rental's share of the horizon the lead time takes."""
    if lead_time_weeks <= 0 or cheapest_rental <= 0:
        return 0
    share = min(1.0, lead_months(lead_time_weeks) / horizon_months)
    return round(cheapest_rental * share)


def with_bridges(instance: ir.Instance) -> ir.Instance:
    """The instance with each owned option's rental until delivery (its server model's
    `Sku.lead_time_days`) or, on a model the team owns, until its servers are at the
    placement's site (`Placement.bridge`). Every stage that changes an instance's rentals
    or options (the sensitivity analysis) calls it again."""
    rentals = [*instance.cloud, *instance.bursts]
    owned_models = {s.sku for s in instance.stock}
    h = instance.horizon_months
    owned: list[ir.OwnedOption] = []
    for o in instance.owned:
        sku = instance.skus.get(o.sku)
        lead_weeks = sku.lead_time_days / 7 if sku is not None else 0.0
        # A mixed option's burst runs from the start: only the base's share is bridged.
        found = bridging_rental(rentals, o.workload, o.share_permille)
        rental = found.cost_total if found is not None else 0
        held = o.sku in owned_models
        cost = 0 if held else bridge_cost(rental, lead_weeks, h)
        waits = [
            wait_for(instance.stock, o, p.site, lead_weeks).weeks if held else 0.0
            for p in o.placements
        ]
        placements = tuple(
            _with_bridge(p, bridge_cost(rental, w, h))
            for p, w in zip(o.placements, waits, strict=True)
        )
        if cost != o.bridge or placements != o.placements:
            o = dataclasses.replace(o, bridge=cost, placements=placements)
        owned.append(o)
    return dataclasses.replace(instance, owned=tuple(owned))


@dataclass(frozen=True)
class Wait:
    """Until `option`'s servers are in service at a site: the sites its owned servers
    move from, the longest days one is out of service, and whether the rest is bought."""

    moved_from: tuple[str, ...]
    downtime_days: float
    bought: bool
    lead_weeks: float

    @property
    def weeks(self) -> float:
        moving = self.downtime_days / 7
        return max(moving, self.lead_weeks) if self.bought else moving

    def says(self) -> str:
        moved = (
            f"moved from {', '.join(self.moved_from)}, {self.downtime_days:g} days out of service"
        )
        bought = f"the rest delivered in {self.lead_weeks:g} weeks"
        if not self.bought:
            return moved
        return f"{moved}; {bought}" if self.moved_from else bought


def wait_for(
    stock: Sequence[ir.Stock], option: ir.OwnedOption, site: str, lead_weeks: float
) -> Wait:
    """Until the owned servers of `option`'s model are in service at `site`: its own
    stock first, then the movable lines elsewhere, fewest days out of service first, then
    a purchase (see the module notes)."""
    lines = [s for s in stock if s.sku == option.sku]
    short = option.servers - sum(s.count for s in lines if s.site == site)
    taken: list[ir.Stock] = []
    for line in sorted(lines, key=lambda s: (s.move_downtime_days, s.site)):
        if short <= 0:
            break
        if line.site != site and line.move_cost is not None:
            short -= line.count
            taken.append(line)
    days = max((s.move_downtime_days for s in taken), default=0.0)
    return Wait(tuple(s.site for s in taken), days, short > 0, lead_weeks)


def _with_bridge(placement: ir.Placement, cost: int) -> ir.Placement:
    return placement if cost == placement.bridge else dataclasses.replace(placement, bridge=cost)


def bridging_rental(
    rentals: Sequence[ir.CloudOption], workload: str, share_permille: int
) -> ir.CloudOption | None:
    """The rental that runs a workload's part until its servers work: the cheapest that
    breaks no requirement and carries at least that part's share of the demand (a base at
    the share its owned stock carries has no rental sized to that share exactly)."""
    covering = [
        c
        for c in rentals
        if c.workload == workload and c.share_permille >= share_permille and not c.violates
    ]
    return min(covering, key=lambda c: (c.cost_total, c.key), default=None)
