"""Rule files: declarative sizing heuristics with CEL predicates (structure only)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpusolve.models.common import FiniteFloat, Identifier, StrictModel

CandidateKind = Literal["card", "server", "offer", "cloud", "deployment"]
ParamValue = bool | int | FiniteFloat | str


class Prefer(StrictModel):
    """A soft predicate. A violation costs either a share of what the option that misses it
    costs (`share`: the plan pays up to that much more to meet it) or, where the rule's
    author says so, a fixed money-equivalent (`penalty`, in the run currency). Either way it
    is charged only where some allowed option meets the preference."""

    expr: str = Field(min_length=1, max_length=4000, description="CEL; true means preferred.")
    share: FiniteFloat | None = Field(
        default=None,
        gt=0,
        le=1,
        description=(
            "Penalty as a share of the cost of the option that misses the preference: its "
            "servers' purchase price, or its rental over the horizon (0.05 = 5%)."
        ),
    )
    # Money-equivalent: above the largest price a catalogue may hold it outweighs any cost.
    penalty: FiniteFloat | None = Field(
        default=None,
        ge=0,
        le=1e12,
        description="Penalty in money (run currency) per violation, stated by the rule's author.",
    )
    reason: str | None = None

    @model_validator(mode="after")
    def _one_penalty(self) -> Prefer:
        if (self.share is None) == (self.penalty is None):
            raise ValueError(
                "a prefer needs exactly one of `share` (a share of the option's cost, "
                "e.g. 0.05) or `penalty` (money, run currency)"
            )
        return self


def penalty_text(share: float | None, penalty: float | None) -> str:
    """How a prefer charges, in words: `5% of the option's cost` or `50,000 (money)`."""
    if share is not None:
        return f"{share:.0%} of the option's cost"
    return f"{penalty or 0:,.0f} (money)"


class Rule(StrictModel):
    id: Identifier
    source: str = Field(pattern=r"^H(0[1-9]|[1-3][0-9]|4[0-4])$", description="Heuristic H01-H44.")
    title: str = Field(min_length=3, max_length=200)
    when: str = Field(
        default="true", min_length=1, max_length=4000, description="CEL over workload, reqs."
    )
    set: dict[str, ParamValue] = Field(default_factory=dict)
    require: dict[CandidateKind, str] = Field(default_factory=dict)
    prefer: dict[CandidateKind, Prefer] = Field(default_factory=dict)
    advise: str | None = None
    override: bool = Field(default=False, description="Replace an earlier rule with this id.")
    notes: str | None = None

    @model_validator(mode="after")
    def _has_effect(self) -> Rule:
        if not (self.set or self.require or self.prefer or self.advise):
            raise ValueError("a rule needs at least one effect: set, require, prefer or advise")
        for kind, expr in self.require.items():
            if not expr.strip():
                raise ValueError(f"require.{kind} is empty")
            if len(expr) > 4000:
                raise ValueError(f"require.{kind} is longer than 4000 characters")
        return self


class RuleFile(StrictModel):
    schema_: str | None = Field(default=None, alias="$schema")
    disable: list[Identifier] = Field(default_factory=list, description="Rule ids to switch off.")
    rules: list[Rule] = Field(default_factory=list)


class Heuristic(StrictModel):
    """One numbered rule of thumb, in the project's own words."""

    id: str = Field(pattern=r"^H(0[1-9]|[1-3][0-9]|4[0-4])$")
    document: Literal["A", "B"]
    section: str
    summary: str = Field(min_length=10)
    correction: str | None = Field(
        default=None, description="Where the source document's own figure is wrong."
    )


class HeuristicsFile(StrictModel):
    schema_: str | None = Field(default=None, alias="$schema")
    documents: dict[Literal["A", "B"], str]
    heuristics: list[Heuristic]
