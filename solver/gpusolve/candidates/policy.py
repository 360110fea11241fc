"""What the candidates stage needs from the rules stage, as a narrow protocol.

Keeping the dependency this thin lets candidates be tested with a plain policy, and keeps
the CEL engine out of the candidates code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gpusolve.params import Params


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


@dataclass
class PlainPolicy:
    """No rules at all: defaults only. Used by tests and by `--no-rules`."""

    params: Params = field(default_factory=Params)

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return []

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return Penalty()
