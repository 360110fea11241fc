"""What the candidates stage needs from the rules stage, as a narrow protocol.

Keeping the dependency this thin lets candidates be tested with a plain policy, and keeps
the CEL engine out of the candidates code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from gpusolve.models.params import Params


@dataclass(frozen=True)
class RuleHit:
    rule: str
    source: str
    title: str
    detail: str = ""

    def sentence(self) -> str:
        text = f"rule {self.rule} ({self.source}: {self.title})"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass(frozen=True)
class Penalty:
    money: float = 0.0
    rules: tuple[RuleHit, ...] = ()
    amounts: tuple[float, ...] = ()  # the money each of `rules` charges, same order
    # the share of the missing option's cost each of `rules` charges, same order (0 = none)
    shares: tuple[float, ...] = ()
    kinds: tuple[str, ...] = ()  # the candidate kind each of `rules` judged, same order


@dataclass(frozen=True)
class Charge:
    """One soft-rule penalty in whole money units, as the optimiser charges it."""

    rule: str
    source: str
    reason: str
    judged: str  # the candidate kind the rule judged: card, server, offer, cloud, deployment
    amount: int
    # What `amount` is made of: money + share x the cost of the option that misses the
    # rule (a price probe that moves that cost prices the charge again).
    money: float = 0.0
    share: float = 0.0


def charges(kind: str, penalty: Penalty, base: float = 0.0) -> tuple[Charge, ...]:
    """A penalty split by rule, each rounded to whole units once (so the charges sum to the
    penalty the optimiser sees). A rule's amount is its money plus its share of `base`, the
    cost of the option that misses it (its servers' price, or its rental over the horizon).
    A policy that gives only a total yields one unnamed line."""
    from gpusolve.models.money import to_money

    if len(penalty.amounts) == len(penalty.rules) and penalty.rules:
        kinds = penalty.kinds if len(penalty.kinds) == len(penalty.rules) else ()
        shares = penalty.shares if len(penalty.shares) == len(penalty.rules) else ()
        out = tuple(
            Charge(
                h.rule,
                h.source,
                h.detail or h.title,
                kinds[i] if kinds else kind,
                to_money(a + (shares[i] * base if shares else 0.0)),
                a,
                shares[i] if shares else 0.0,
            )
            for i, (h, a) in enumerate(zip(penalty.rules, penalty.amounts, strict=True))
        )
        return tuple(c for c in out if c.amount)
    amount = to_money(penalty.money)
    if not amount:
        return ()
    names = ", ".join(h.rule for h in penalty.rules) or "soft rules"
    return (Charge(names, "", "penalty without a per-rule split", kind, amount, penalty.money),)


def share_terms(charged: Iterable[Charge]) -> tuple[tuple[float, float], ...]:
    """(money, share) of each charge priced on a share of its option's cost."""
    return tuple((c.money, c.share) for c in charged if c.share)


def repriced(penalty: int, terms: tuple[tuple[float, float], ...], old: float, new: float) -> int:
    """`penalty` with its charges that take a share of the option's cost priced on `new`
    instead of `old`, each rounded once as `charges` rounds it."""
    from gpusolve.models.money import to_money

    if not terms:
        return penalty
    before = sum(to_money(m + s * old) for m, s in terms)
    return penalty - before + sum(to_money(m + s * new) for m, s in terms)


class WorkloadPolicy(Protocol):
    """Rule outcomes for one workload."""

    @property
    def params(self) -> Params: ...

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        """Require-rules of this kind that the subject fails (empty = passes)."""
        ...

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        """Prefer-rules of this kind that the subject misses, with their total penalty."""
        ...

    def param_origin(self, name: str) -> str | None:
        """Who set parameter `name`: a rule id, "default" or "user"; None when untracked."""
        ...
