"""Where hardware is bought: in market `cn`, cards restricted for export to China are not bought.

The US export rules (BIS 2022-10, 2023-10, the 2025 H20 licence requirement) decide which
cards can be *sold* into China; the catalogue records each card's status with its source and
date (`export_cn`). In market cn a server whose card is restricted is not a purchase
candidate unless the requirements allow it (`allow_restricted:` for stock already owned or a
compliant channel). Renting from a cloud provider inside China stays possible: the provider
holds the hardware; the plan says so in its compliance lines.

This is a filter on the candidates (a policy wrapper), not a rule file: the facts live on the
cards, where a user's catalogue can `patch:` them to their legal team's view.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusolve.models.catalog import Card, Catalog, Server
from gpusolve.models.inventory import Owned
from gpusolve.models.params import Params
from gpusolve.models.plan import ComplianceLine, Deployment, Excluded
from gpusolve.models.policy import Penalty, RuleHit, WorkloadPolicy
from gpusolve.models.regions import REGIONS, canonical_region, resolve
from gpusolve.models.requirements import Requirements

RULE_ID = "export-cn"
# Every region gpusolve knows by name is in mainland China.
CHINA_REGIONS: frozenset[str] = frozenset(REGIONS)


@dataclass(frozen=True)
class MarketView:
    """The run's market, why it is that, and the ids the user allows although restricted."""

    market: str  # "cn" or "global"
    basis: str
    allowed: frozenset[str] = frozenset()
    # Server ids owned (the requirements' `owned:`) -> the sites holding them: export rules
    # restrict sales, not stock already held, so these are used there, never bought more.
    held: dict[str, frozenset[str]] = field(default_factory=dict)
    # Owned server ids of which some line may move (`movable`): usable at any site.
    movable: frozenset[str] = frozenset()


def resolve_market(reqs: Requirements, catalog: Catalog) -> MarketView:
    """The stated market, else cn when every region the run may use is in China."""
    return market_view(
        catalog, reqs.market, reqs.regions.allowed, reqs.allow_restricted, reqs.owned
    )


def market_view(
    catalog: Catalog,
    market: str | None,
    regions: Sequence[str] | None,
    allow_restricted: Sequence[str],
    owned: Owned,
) -> MarketView:
    """The market of a run (`plan`'s requirements or `colo`'s fleet): the stated one, else
    cn when every allowed region (or, without any, every catalogue region) is in China."""
    allowed = frozenset(allow_restricted)
    held: dict[str, set[str]] = {}
    for item in owned.servers:
        held.setdefault(item.server, set()).add(item.site)
    stock = {k: frozenset(v) for k, v in held.items()}
    movable = frozenset(item.server for item in owned.servers if item.movable)
    if market is not None:
        basis = "stated in the requirements (market:)"
        return MarketView(market, basis, allowed, stock, movable)
    if regions:
        in_china = all(_term_in_china(t, catalog) for t in regions)
        where = "every allowed region is" if in_china else "an allowed region is not"
    else:
        known = _catalogue_regions(catalog)
        in_china = bool(known) and all(r in CHINA_REGIONS for r in known)
        where = "every catalogue region is" if in_china else "a catalogue region is not"
    resolved = "cn" if in_china else "global"
    return MarketView(resolved, f"default: {where} in China", allowed, stock, movable)


def _catalogue_regions(catalog: Catalog) -> set[str]:
    offers: Iterable[Any] = [*catalog.colo_offers.values(), *catalog.cloud_offers.values()]
    return {canonical_region(o.region) or o.region for o in offers}


def _term_in_china(term: str, catalog: Catalog) -> bool:
    known = frozenset(_catalogue_regions(catalog))
    place = resolve(term, known)
    if place is None:
        return False
    if place.city is not None:
        return True  # resolve() only knows cities of Chinese regions
    return bool(place.regions) and all(r in CHINA_REGIONS for r in place.regions)


def purchase_block(card: Card, server: Server, view: MarketView) -> str | None:
    """Why `server` cannot be bought in this market, or None when it can."""
    if view.market != "cn" or card.export_cn is None or not card.export_cn.restricted:
        return None
    if card.id in view.allowed or server.id in view.allowed:
        return None
    status = card.export_cn
    return (
        f"{card.id} is {status.status} for China ({status.rule}; as of {status.as_of}); "
        f"not bought in market cn; add it to allow_restricted: if you own the stock or have "
        "a compliant channel"
    )


@dataclass
class MarketPolicy:
    """A workload policy that also fails purchases the market forbids; the rest passes through."""

    inner: WorkloadPolicy
    catalog: Catalog
    view: MarketView

    @property
    def params(self) -> Params:
        return self.inner.params

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        hits = self.inner.failed(kind, subject, context)
        if kind == "server" and isinstance(subject, Server):
            reason = purchase_block(self.catalog.cards[subject.card], subject, self.view)
            if reason is not None and subject.id not in self.view.held:
                hits = [*hits, RuleHit(RULE_ID, "market cn", "export control", reason)]
        server = context.get("server")
        pinned = (
            isinstance(server, Server)
            and server.id in self.view.held
            and server.id not in self.view.movable
        )
        if kind == "offer" and isinstance(server, Server) and pinned:
            reason = purchase_block(self.catalog.cards[server.card], server, self.view)
            sites = self.view.held[server.id]
            if reason is not None and getattr(subject, "id", None) not in sites:
                why = f"only the owned {server.id} at {', '.join(sorted(sites))}; {reason}"
                hits = [*hits, RuleHit(RULE_ID, "market cn", "export control", why)]
        return hits

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return self.inner.penalty(kind, subject, context)

    def param_origin(self, name: str) -> str | None:
        return self.inner.param_origin(name)


def apply_market(
    policies: dict[str, WorkloadPolicy], catalog: Catalog, view: MarketView
) -> dict[str, WorkloadPolicy]:
    if view.market != "cn":
        return policies
    return {name: MarketPolicy(p, catalog, view) for name, p in policies.items()}


def exclusions(catalog: Catalog, view: MarketView) -> list[Excluded]:
    """Every server the market keeps out of the purchase candidates, with the reason."""
    out = []
    for server in catalog.servers.values():
        card = catalog.cards[server.card]
        reason = purchase_block(card, server, view)
        if reason is not None and card.export_cn is not None:
            out.append(
                Excluded(
                    item=server.id,
                    card=card.id,
                    status=card.export_cn.status,
                    rule=card.export_cn.rule,
                    reason=reason,
                )
            )
    return out


def compliance(
    deployments: Iterable[Deployment],
    catalog: Catalog,
    view: MarketView,
    owned: frozenset[str] = frozenset(),
) -> list[ComplianceLine]:
    """One line per card the plan uses: its export status and how the plan acquires it.
    `owned`: server ids the plan runs from stock already held (the requirements' `owned:`);
    a server model both owned and bought counts as both."""
    uses: list[tuple[str, str]] = []
    for d in deployments:
        if d.mode != "owned":
            how = "rented"
        elif d.server in owned:
            how = "owned"
        else:
            how = "bought"
        uses.append((d.card, how))
    return compliance_lines(uses, catalog, view)


def compliance_lines(
    uses: Iterable[tuple[str, str]], catalog: Catalog, view: MarketView
) -> list[ComplianceLine]:
    """One line per card of the (card id, use) pairs, use one of bought, owned, rented, or
    "to buy" (`colo`: servers of a fleet that the market forbids buying)."""
    by_card: dict[str, set[str]] = {}
    for card, how in uses:
        by_card.setdefault(card, set()).add(how)
    return [_line(catalog.cards[c], sorted(u), view) for c, u in sorted(by_card.items())]


def _line(card: Card, uses: list[str], view: MarketView) -> ComplianceLine:
    status = card.export_cn
    state = status.status if status is not None else "unknown"
    how = " and ".join(uses)
    if state == "unknown":
        verdict = "export status for China unknown: check it before buying"
    elif status is not None and not status.restricted:
        verdict = f"not restricted for China as of {status.as_of}"
    elif view.market != "cn":
        verdict = f"{state} for China; market {view.market}: not applied"
    elif "to buy" in uses:  # `colo`: a fleet the market forbids buying
        verdict = (
            f"{state} for China; not bought in market cn: add it to allow_restricted: if "
            "you own the stock (or list it under owned:) or have a compliant channel"
        )
    elif "bought" in uses:
        verdict = (
            f"{state} for China; bought under allow_restricted (owned stock or a compliant channel)"
        )
    elif "owned" in uses:
        verdict = (
            f"{state} for China; owned already (listed under owned:): export rules "
            "restrict sales, not the use of stock already held; none is bought"
        )
    else:
        verdict = f"{state} for China; rented from a provider in China, which holds the hardware"
    return ComplianceLine(
        card=card.id,
        use=how,
        status=state,
        rule=status.rule if status else None,
        source=status.source if status else None,
        as_of=status.as_of if status else None,
        verdict=verdict,
    )
