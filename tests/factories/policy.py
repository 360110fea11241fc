"""A rule policy for the candidates stage: `NoRules` fails nothing, charges nothing and
keeps the default parameters (what a workload sees when no rule file applies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusolve.models.params import Params
from gpusolve.models.policy import Penalty, RuleHit


@dataclass
class NoRules:
    params: Params = field(default_factory=Params)

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return []

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return Penalty()

    def param_origin(self, name: str) -> str | None:
        return None
