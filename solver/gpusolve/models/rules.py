"""Rule files: declarative sizing heuristics with CEL predicates (structure only)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpusolve.models.common import FiniteFloat, Identifier, StrictModel

CandidateKind = Literal["card", "server", "offer", "cloud", "deployment"]
ParamValue = bool | int | FiniteFloat | str


class Prefer(StrictModel):
    """A soft predicate: each violation costs a money-equivalent penalty in the run currency."""

    expr: str = Field(min_length=1, max_length=4000, description="CEL; true means preferred.")
    # Money-equivalent: above the largest price a catalogue may hold it outweighs any cost.
    penalty: FiniteFloat = Field(ge=0, le=1e12)
    reason: str | None = None


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
