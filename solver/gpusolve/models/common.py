"""Shared field types: provenance, money labels, strict base model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

Currency = Annotated[
    str,
    Field(
        pattern=r"^[A-Z]{3}$",
        description="ISO 4217 code; one currency per run (CNY by default).",
    ),
]

Confidence = Literal["V", "D", "E", "U"]
"""V verified in a vendor document; D datasheet value quoted by others; E estimate; U uncertain."""


class LocatedValueError(ValueError):
    """A model-level check's error about one field below the model: `path` leads to it
    (e.g. ("workloads", 0, "demand_by_period", 2)), so the message is located at its line
    rather than at the enclosing object."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number (not NaN or infinity)")
    return value


FiniteFloat = Annotated[float, AfterValidator(_finite)]
PositiveFloat = Annotated[float, Field(gt=0), AfterValidator(_finite)]
NonNegativeFloat = Annotated[float, Field(ge=0), AfterValidator(_finite)]
Fraction = Annotated[float, Field(ge=0, le=1), AfterValidator(_finite)]
Identifier = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9._-]*$",
        max_length=80,
        description="Lower-case id: letters, digits, '.', '_' and '-'.",
    ),
]

# A region list names at least one region: an empty one allows nowhere, and read as "no
# restriction" it planned anywhere, the opposite of what it says. Absent means anywhere.
RegionList = Annotated[list[str], Field(min_length=1)]


# The version of the results' layout (every JSON or YAML result states it, with its `kind`):
# a reader checks it before reading further; it changes when a field is removed, renamed
# or means something else, not when one is added.
SCHEMA_VERSION = 1


def schema_version_field() -> Any:
    """A result's `schema_version`: `SCHEMA_VERSION` when written."""
    return Field(
        default=SCHEMA_VERSION,
        description="The layout version of this result; changes when a field is removed, "
        "renamed or changes meaning.",
    )


def versioned(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A result written as a plain mapping (a listing, a table's rows), with its `kind`
    and `schema_version` first, as the results written from a model carry them."""
    return {"kind": kind, "schema_version": SCHEMA_VERSION, **data}


class OutModel(BaseModel):
    """The base of every output model: a field the contract does not declare is a bug."""

    model_config = ConfigDict(extra="forbid")


class LazyOutModel(OutModel):
    """An output model whose validator and serializer are built on first use, not at
    import: for the outputs a plain `plan` never builds (estimates, schedules), a few tenths
    of a millisecond of each start-up per model (benchmarks/README.md, "Start-up"). A model
    that holds one builds its schema as before; the JSON Schemas are the same."""

    model_config = ConfigDict(defer_build=True)


OutT = TypeVar("OutT", bound=BaseModel)


def out_from(model: type[OutT], source: object, **computed: Any) -> OutT:
    """`model` read from the attributes of `source` that bear its field names (pydantic's
    `from_attributes`), with `computed` for the fields whose value is converted or derived
    (a unit change, a nested result): an internal result and its output model name the
    same figure the same way, so each figure is copied once, by name."""
    named = {n: getattr(source, n) for n in model.model_fields if n not in computed}
    return model.model_validate({**named, **computed})


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a user's YAML must not be silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PriceNote(StrictModel):
    """Where a price comes from. Prices that are not real quotes say so."""

    illustrative: bool = Field(
        description="True unless the price is a real published price or a quote."
    )
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="Date of the price.")
    source: str = Field(min_length=3, description="Where the figure comes from.")
