"""The state the candidates stage builds its options into (`Builder`), and the names of
the requirements options are tagged with."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpusolve.candidates import preferences
from gpusolve.candidates.records import OptionMeta, Rejection
from gpusolve.candidates.reserve import RackReserve
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import MarginMiss
from gpusolve.models.policy import Charge, WorkloadPolicy, share_terms
from gpusolve.models.regions import Place, resolve
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.optimize import finance, ir


@dataclass(frozen=True, slots=True)
class SiteCharges:
    """The charges of an option's placement at one site, their sum (`Placement.penalty`)
    and their share terms (`Placement.penalty_shares`), kept once per distinct value."""

    charges: tuple[Charge, ...]
    amount: int
    shares: tuple[tuple[float, float], ...]


def interned_charges(b: Builder, charged: tuple[Charge, ...]) -> SiteCharges:
    """`charged` with its sum and share terms, the same objects for equal charges: an
    option misses the same offer preferences at most of its sites (each priced on the
    option's servers), so at sixteen times the shipped catalogue equal tuples of equal
    charges repeat across a hundred sites per option."""
    found = b.charges_seen.get(charged)
    if found is None:
        found = SiteCharges(charged, sum(c.amount for c in charged), share_terms(charged))
        b.charges_seen[charged] = found
    return found


@dataclass
class Builder:
    reqs: Requirements
    catalog: Catalog
    policies: dict[str, WorkloadPolicy]
    explain: bool
    owned: list[ir.OwnedOption] = field(default_factory=list)
    cloud: list[ir.CloudOption] = field(default_factory=list)
    bursts: list[ir.CloudOption] = field(default_factory=list)  # `burst.py`
    meta: dict[str, OptionMeta] = field(default_factory=dict)
    rejections: dict[str, list[Rejection]] = field(default_factory=dict)
    terms: finance.Terms = field(default_factory=finance.Terms)
    requirements: dict[str, ir.Requirement] = field(default_factory=dict)
    reserves: dict[str, RackReserve] = field(default_factory=dict)  # colo offer id -> rack
    # Each workload's deadline as written (the options are sized to it less the margin).
    written_deadline: dict[str, float | None] = field(default_factory=dict)
    # Candidates whose fastest layout meets a deadline as written, not with its margin.
    margin_misses: list[MarginMiss] = field(default_factory=list)
    # Per workload: what each allowed option misses, with its card (`ir.Instance.missed`).
    missed: dict[str, frozenset[tuple[str, frozenset[preferences.Key]]]] = field(
        default_factory=dict
    )
    # Every distinct placement once (`options.shared_placements`).
    placements_seen: dict[ir.Placement, ir.Placement] = field(default_factory=dict)
    # Every distinct tuple of charges once, with its sum and share terms (`options.py`).
    charges_seen: dict[tuple[Charge, ...], SiteCharges] = field(default_factory=dict)

    def part(self) -> Builder:
        """A builder that shares this one's inputs and requirements but collects its own
        options, metadata and rejections: options sized for a share or a multiple of a
        workload's demand (`burst.py`, `fleets.py`) are not sized for the demand itself,
        and a candidate too small for one of them is no reason to reject it for the whole."""
        return dataclasses.replace(
            self,
            owned=[],
            cloud=[],
            bursts=[],
            meta={},
            rejections={},
            margin_misses=[],
            missed={},
        )

    def require(self, name: str, description: str, weight: int) -> str:
        self.requirements.setdefault(name, ir.Requirement(name, description, weight))
        return name

    def reject(self, workload: str, candidate: str, reasons: Iterable[str]) -> None:
        rejection = Rejection(workload, candidate, list(reasons))
        mine = self.rejections.setdefault(workload, [])
        if rejection not in mine:  # several layout sizes of one candidate can say the same
            mine.append(rejection)


def unique_key(b: Builder, key: str) -> str:
    """`key`, or `key|v2`, `key|v3` ... when another layout of the same size (an inference
    replica shape) already took it: the first layout keeps the plain key."""
    if key not in b.meta:
        return key
    n = 2
    while f"{key}|v{n}" in b.meta:
        n += 1
    return f"{key}|v{n}"


def region_ok(reqs: Requirements, w: Workload, region: str, city: str) -> bool:
    known = frozenset({region})
    for terms in (reqs.regions.allowed, w.regions):
        places = place_terms(terms, known)
        if places is not None and not any(p.matches(region, city) for p in places):
            return False
    return True


def place_terms(terms: list[str] | None, known: frozenset[str]) -> list[Place] | None:
    if not terms:
        return None
    return [p for p in (resolve(t, known) for t in terms) if p is not None]


def region_requirement(b: Builder, w: Workload) -> str:
    terms = [*(b.reqs.regions.allowed or []), *(w.regions or [])]
    return b.require(f"regions:{w.name}", f"{w.name} limited to {', '.join(terms)}", 6)


def rule_requirement(b: Builder, rule: str, source: str, title: str) -> str:
    return b.require(f"rule:{rule}", f"rule {rule} ({source}: {title})", 5)
