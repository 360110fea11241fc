"""Preferences no allowed option meets: charged nowhere, and said why.

A soft rule (`prefer`) steers the choice between options that are all allowed. When every
allowed option of a workload misses it (after the market's export exclusions, the
horizon, the fit in memory, the deadline and the hard rules), its penalty would only add
the same amount to every plan, or tilt the choice between options that all miss it, and
inflate the printed objective: so it is not charged, and the plan says so with the reason.

"Allowed" is what the optimiser may pick without breaking a requirement: an option, and
for owned servers one of its placements, that carries no `violates` tag (explain mode keeps
options that do, tagged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import UnmetPreference
from gpusolve.models.policy import Charge, WorkloadPolicy
from gpusolve.models.requirements import Workload

Key = tuple[str, str]  # (rule id, kind the rule judged)
CATALOG_KINDS = {
    "card": "cards",
    "server": "servers",
    "cloud": "cloud_offers",
    "offer": "colo_offers",
}
MAX_ITEMS = 2  # catalogue items named per unmet preference


def keys(charged: Iterable[Charge]) -> frozenset[Key]:
    return frozenset((c.rule, c.judged) for c in charged)


def unmeetable(allowed: Sequence[frozenset[Key]]) -> frozenset[Key]:
    """The preferences every allowed option misses (`allowed`: the preferences each allowed
    option, or owned option at one site, misses). Nothing when no option is allowed."""
    if not allowed:
        return frozenset()
    return frozenset.intersection(*allowed)


def without(charged: tuple[Charge, ...], drop: frozenset[Key]) -> tuple[Charge, ...]:
    return tuple(c for c in charged if (c.rule, c.judged) not in drop)


def describe(
    w: Workload,
    drop: frozenset[Key],
    charged: Iterable[Charge],
    policy: WorkloadPolicy,
    catalog: Catalog,
    rejected: Mapping[str, list[str]],
) -> list[UnmetPreference]:
    """One line per unmet preference of `w`, with why no allowed option meets it.
    `charged`: charges of the workload's options (for the rule's source and reason);
    `rejected`: catalogue id (server, cloud or colo offer) -> why it is no option of `w`."""
    first: dict[Key, Charge] = {}
    for c in charged:
        first.setdefault((c.rule, c.judged), c)
    out = []
    for rule, kind in sorted(drop):
        charge = first.get((rule, kind))
        out.append(
            UnmetPreference(
                workload=w.name,
                rule=rule,
                source=charge.source if charge else "",
                judged=kind,
                reason=charge.reason if charge else "",
                why=_why(w, rule, kind, policy, catalog, rejected),
            )
        )
    return out


def _why(
    w: Workload,
    rule: str,
    kind: str,
    policy: WorkloadPolicy,
    catalog: Catalog,
    rejected: Mapping[str, list[str]],
) -> str:
    """Which catalogue items would meet the preference, and why none is an allowed option."""
    if kind not in CATALOG_KINDS:
        return f"every layout of {w.name} that fits and meets its deadline misses it"
    items: Mapping[str, Any] = getattr(catalog, CATALOG_KINDS[kind])
    context = {"workload": w}
    meeting = [
        item_id
        for item_id, item in items.items()
        if rule not in {h.rule for h in policy.penalty(kind, item, context).rules}
    ]
    if not meeting:
        return f"no {kind} in the catalogue meets it"
    reasons = _reasons(kind, meeting, catalog, rejected)
    shown = "; ".join(reasons[:MAX_ITEMS])
    more = f"; {len(reasons) - MAX_ITEMS} more" if len(reasons) > MAX_ITEMS else ""
    return f"no allowed option meets it: {shown}{more}"


def _reasons(
    kind: str, meeting: list[str], catalog: Catalog, rejected: Mapping[str, list[str]]
) -> list[str]:
    """Why each item that meets the preference is no allowed option: for a card, the
    servers and cloud offers that carry it."""
    if kind == "card":
        cards = set(meeting)
        carriers = [s.id for s in catalog.servers.values() if s.card in cards]
        carriers += [c.id for c in catalog.cloud_offers.values() if c.card in cards]
        if not carriers:
            return [f"{', '.join(meeting)}: no server or cloud offer in the catalogue has it"]
        meeting = carriers
    out = []
    for item_id in meeting:
        why = rejected.get(item_id)
        text = why[0] if why else "no allowed option of this workload uses it"
        out.append(f"{item_id}: {_clip(text)}")
    return out


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
