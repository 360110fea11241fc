"""Shared field types: provenance, money labels, strict base model."""

from __future__ import annotations

import math
from typing import Annotated, Literal

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


class OutModel(BaseModel):
    """The base of every output model: a field the contract does not declare is a bug."""

    model_config = ConfigDict(extra="forbid")


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
