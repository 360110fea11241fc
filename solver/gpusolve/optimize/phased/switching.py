"""What moving a workload between platforms or sites costs between two periods.

A workload runs on one platform in each period: a card at a colocation site (owned), or a
card at a cloud offer (rented). When the platform it runs on in period p differs from the
one in period p - 1, the move costs its stated amount once (copying weights and data,
re-deploying the stack, validating it on the new hardware): `PhasedInstance.switch_cost`.
Without it a schedule hops platforms whenever a period's prices favour another by a yuan.

Linear, as the rest of the schedule: z[w,g,p] is the sum of w's choice Booleans on platform
g in period p (0 or 1: exactly one choice per period), and

    moved[w,p] >= z[w,g,p] - z[w,g,p-1]   for every platform g that w may use in period p,

a Boolean that the objective keeps at 0 unless the platform changed. A workload that starts
in period p (not running in p - 1) is deployed for the first time, not moved: no charge.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ortools.sat.python import cp_model

from gpusolve.optimize.builder import Var, wsum
from gpusolve.optimize.ir import CloudOption, OwnedOption
from gpusolve.optimize.phased.ir import PeriodChoice, PeriodPlan, PhasedInstance

Platform = tuple[str, str]  # (card or server model, site or cloud offer)


def owned_platform(pi: PhasedInstance, p: int, option: OwnedOption, site: str) -> Platform:
    """Where an owned option runs: its card (the server model when no card is known) at
    the site."""
    return (_card(pi, p, option.key, option.sku), site)


def cloud_platform(pi: PhasedInstance, p: int, option: CloudOption) -> Platform:
    """Where a rental runs: its card at the offer (another provider is another platform)."""
    return (_card(pi, p, option.key, option.offer), f"cloud:{option.offer}")


def _card(pi: PhasedInstance, p: int, key: str, fallback: str) -> str:
    cards = pi.cards[p] if p < len(pi.cards) else {}
    return cards.get(key, fallback)


def platform_choices(
    pi: PhasedInstance, p: int, owned: list[Any], cloud: list[Any]
) -> dict[str, dict[Platform, list[Var]]]:
    """Per workload, per platform, the choice Booleans of period p on it."""
    out: dict[str, dict[Platform, list[Var]]] = defaultdict(lambda: defaultdict(list))
    for o in owned:
        out[o.option.workload][owned_platform(pi, p, o.option, o.placement.site)].append(o.var)
    for c in cloud:
        out[c.option.workload][cloud_platform(pi, p, c.option)].append(c.var)
    return out


def add_switching(
    m: cp_model.CpModel, pi: PhasedInstance, periods: list[Any], exprs: dict[str, Any]
) -> dict[tuple[str, int], Var]:
    """moved[w,p] per workload running in periods p - 1 and p, and `switching:<p>`, what
    the moves into period p cost. `periods`: each period's `PeriodModel`."""
    moved: dict[tuple[str, int], Var] = {}
    before: dict[str, dict[Platform, list[Var]]] = {}
    for p, pm in enumerate(periods):
        now = platform_choices(pi, p, pm.owned, pm.cloud)
        terms: list[tuple[int, Var]] = []
        for w, here in sorted(now.items()):
            cost = pi.switch_cost.get(w, 0)
            then = before.get(w)
            if cost <= 0 or then is None:
                continue
            var = m.new_bool_var(f"moved[{w},{p}]")
            for platform, choices in sorted(here.items()):
                earlier = then.get(platform, [])
                m.add(var >= sum(choices) - sum(earlier))
            moved[w, p] = var
            terms.append((cost, var))
        exprs[f"switching:{p}"] = wsum(terms)
        before = now
    return moved


def choice_platform(pi: PhasedInstance, p: int, choice: PeriodChoice) -> Platform:
    """Where a solved choice of period p runs, as the model groups it."""
    if choice.offer is not None:
        return (_card(pi, p, choice.option, choice.offer), f"cloud:{choice.offer}")
    return (_card(pi, p, choice.option, choice.sku or ""), choice.site or "")


def moves(pi: PhasedInstance, prev: PeriodPlan | None, now: PeriodPlan) -> list[tuple[str, int]]:
    """(workload, switching cost) of each workload `now` runs on another platform than
    `prev` did, where moving it costs something."""
    if prev is None:
        return []
    p, q = now.period.index, prev.period.index
    before = {c.workload: choice_platform(pi, q, c) for c in prev.choices}
    return [
        (c.workload, pi.switch_cost[c.workload])
        for c in now.choices
        if c.workload in before
        and pi.switch_cost.get(c.workload, 0) > 0
        and choice_platform(pi, p, c) != before[c.workload]
    ]


def add_bridges(
    m: cp_model.CpModel, pi: PhasedInstance, periods: list[Any], exprs: dict[str, Any]
) -> None:
    """Rentals until delivery within a period: a workload that starts on servers of a
    model (at a site) in period p, where a purchase made at p's start is delivered within
    p, rents its cheapest rental until then (`OwnedOption.bridge`, priced over the
    period). A model whose lead time outlasts the period works from a later period
    instead (`works_from`), with nothing to bridge. Owned servers move at the schedule's
    start: a workload placed on them in the first period rents while they travel
    (`Placement.bridge`).

    Each option pays its own figure (a base carries a share of the demand, so its rental
    is smaller than the whole's): in the first period when chosen; later only when its
    (workload, model, site) is new, new[w,k@s,p] >= z[w,k@s,p] - z[w,k@s,p-1] and
    paid[o,p] >= x[o,p] + new[w,k@s,p] - 1, added to `cloud:<p>`."""
    before: dict[tuple[str, str, str], list[Var]] = {}
    for p, pm in enumerate(periods):
        now: dict[tuple[str, str, str], list[Var]] = defaultdict(list)
        costly: dict[tuple[str, str, str], list[tuple[int, Var]]] = defaultdict(list)
        for o in pm.owned:
            key = (o.option.workload, o.option.sku, o.placement.site)
            now[key].append(o.var)
            cost = _bridge_in(pi, p, o.option, o.placement.bridge)
            if cost:
                costly[key].append((cost, o.var))
        terms: list[tuple[int, Var]] = []
        for key, paying in sorted(costly.items()):
            if not before.get(key):
                terms += paying  # nothing of it ran before: every choice is a start
                continue
            new = m.new_bool_var(f"bridged[{key[0]},{key[1]}@{key[2]},{p}]")
            m.add(new >= sum(now[key]) - sum(before[key]))
            for cost, var in paying:
                paid = m.new_bool_var(f"paid[{var.name},{p}]")
                m.add(paid >= var + new - 1)
                terms.append((cost, paid))
        if terms:
            exprs[f"cloud:{p}"] = exprs[f"cloud:{p}"] + wsum(terms)
        before = now


def _bridge_in(pi: PhasedInstance, p: int, option: OwnedOption, moving: int) -> int:
    """What an owned option rents in period p until its servers work: until a delivery
    within p, or (in the first period) until owned servers moved to its site arrive."""
    works = pi.works_from.get(option.sku, ())
    bridge = option.bridge if option.bridge and p < len(works) and works[p] == p else 0
    return max(bridge, moving if p == 0 else 0)
