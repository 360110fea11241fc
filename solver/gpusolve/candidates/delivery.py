"""Delivery lead times in a single plan: a server works only from its delivery.

A plan starts at month 0 and buys at month 0; a server of a model with a lead time of L
weeks (the catalogue's `lead_time_weeks`, a source or a labelled estimate per vendor
channel) is delivered L weeks later. Until then the workload placed on it runs on its
cheapest rental (of the options that break no requirement), pro rata over the horizon:
`OwnedOption.bridge` = that rental's whole cost x min(1, L weeks in months / horizon). A
workload with no rental at all starts at delivery instead (its deployment says so). Servers
the team already owns are there: an option on a server model held in the inventory pays no
bridge.

A schedule uses the same figure within a period (`optimize/phased/model.py`): a purchase
delivered before its period ends works in that period, its workloads bridged until then.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

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
    `Sku.lead_time_days`). Every stage that changes an instance's rentals or options
    (the sensitivity analysis) calls it again."""
    cheapest = _cheapest_rentals([*instance.cloud, *instance.bursts])
    owned_models = {s.sku for s in instance.stock}
    owned: list[ir.OwnedOption] = []
    for o in instance.owned:
        sku = instance.skus.get(o.sku)
        days = sku.lead_time_days if sku is not None else 0
        weeks = 0.0 if o.sku in owned_models else days / 7
        # A mixed option's burst runs from the start: only the base's share is bridged.
        rental = cheapest.get((o.workload, o.share_permille), 0)
        cost = bridge_cost(rental, weeks, instance.horizon_months)
        owned.append(dataclasses.replace(o, bridge=cost) if cost != o.bridge else o)
    return dataclasses.replace(instance, owned=tuple(owned))


def _cheapest_rentals(cloud: Sequence[ir.CloudOption]) -> dict[tuple[str, int], int]:
    """Per workload and share of its demand, its cheapest rental that breaks no
    requirement."""
    out: dict[tuple[str, int], int] = {}
    for c in cloud:
        key = (c.workload, c.share_permille)
        if not c.violates and (key not in out or c.cost_total < out[key]):
            out[key] = c.cost_total
    return out
