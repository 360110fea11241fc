"""`gpusolve rules explain --format json`: which rules fire per workload and what they do;
`gpusolve rules check`: what each rule file adds (`CheckedFile`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from gpusolve.models.common import OutModel, schema_version_field

# A parameter's value (`gpusolve.models.params`): bool before int, so JSON true stays a bool.
ParamValue = bool | int | float | str


class RulesInEffect(OutModel):
    files: list[str] = Field(description="Rule files read, shipped first, in order.")
    in_effect: int = Field(description="Number of rules in effect after overrides.")
    disabled: dict[str, str] = Field(description="Disabled rule id -> file:line that disabled it.")


class PreviousValue(OutModel):
    value: ParamValue | None
    by: str = Field(description="Rule id, `default` or `user` that set the earlier value.")


SHARE = "Penalty as a share of the option's cost."


class TracePrefer(OutModel):
    expr: str
    share: float | None = Field(default=None, description=SHARE)
    penalty: float | None = Field(default=None, description="Penalty in money, where stated.")


class TraceEntryOut(OutModel):
    """One fired rule (or the user's headroom, rule `user`), in evaluation order."""

    order: int
    rule: str
    source: str
    title: str
    where: str = Field(description="file:line of the rule.")
    set: dict[str, ParamValue]
    previous: dict[str, PreviousValue]
    overridden_by: dict[str, str]
    require: dict[str, str] = Field(description="Kind -> CEL expression.")
    prefer: dict[str, TracePrefer]
    advice: str | None
    error: str | None = Field(description="Why `when` could not be evaluated (did not fire).")
    fired: bool


class RemovalOut(OutModel):
    rule: str
    source: str
    title: str
    kind: str = Field(description="card, server, offer (colo) or cloud.")
    removed: list[str]
    errors: dict[str, str] = Field(description="Item id -> evaluation error.")


class ViaRemovedCards(OutModel):
    servers: list[str]
    cloud_offers: list[str]


class LayoutRule(OutModel):
    rule: str
    source: str
    kind: str = Field(description="require or prefer.")
    expr: str


# A preference in effect for a workload: its terms and the rule that states them.
class PreferOut(TracePrefer):
    rule: str


class WorkloadExplain(OutModel):
    workload: str
    kind: str
    params_b: float | None = Field(description="Model size in billions of parameters.")
    params: dict[str, ParamValue] = Field(description="Every parameter's value after the rules.")
    param_origin: dict[str, str] = Field(description="Parameter -> rule id, default or user.")
    trace: list[TraceEntryOut]
    removed: list[RemovalOut]
    via_removed_cards: ViaRemovedCards
    not_checked_without_layouts: list[LayoutRule]
    prefers: dict[str, list[PreferOut]]
    advice: list[str]


class RulesExplainReport(OutModel):
    kind: Literal["rules-explain"] = Field(
        default="rules-explain", description="What this result is."
    )
    schema_version: int = schema_version_field()
    rules: RulesInEffect
    workloads: list[WorkloadExplain]


@dataclass(frozen=True)
class CheckedFile:
    """One rule file of `gpusolve rules check`, as it loads after the shipped rules."""

    path: Path
    rules: int
    replacing_shipped: int
    disabled: int
