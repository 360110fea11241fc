"""What the rules stage reports for a whole plan: the rules that fired and their advice.

It lives here, with the stage that produces it, so that the rules stage never imports the
planner that composes it (`gpusolve.plan.single` re-exports it for its callers).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.models.plan import RuleFired


@dataclass(frozen=True)
class RulesSummary:
    fired: list[RuleFired]
    advice: list[str]
