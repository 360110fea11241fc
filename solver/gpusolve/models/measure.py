"""What `gpusolve measure` reports (JSON output) besides the `measured:` block."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import StrictModel, schema_version_field
from gpusolve.models.requirements import Measured


class StateBytes(StrictModel):
    weights: float
    gradients: float
    optimizer: float


class MeasureReport(StrictModel):
    kind: Literal["measure"] = Field(default="measure", description="What this result is.")
    schema_version: int = schema_version_field()
    workload: str
    device: str = Field(description="cpu, or the CUDA device's name.")
    card: str | None
    steps: int = Field(description="Timed steps (after the warm-up steps).")
    layers: int = Field(description="Layers built.")
    full_layers: int = Field(description="Layers of the workload's model.")
    params: int = Field(description="Parameters built (counted from the tensors).")
    formula_params: float = Field(description="The physics' parameter count for the built shape.")
    step_s: float = Field(description="Mean time of one timed step, seconds.")
    tokens_per_s: float = Field(description="Of the full model (scaled if fewer layers).")
    mfu: float | None = Field(description="Against the card's dense peak; None without a card.")
    counted_states: StateBytes = Field(description="Bytes of the tensors PyTorch holds.")
    formula_states: StateBytes = Field(description="The physics' model-state bytes.")
    saved_activation_bytes: float = Field(
        description="Bytes autograd saved for backward in one micro-batch's forward."
    )
    formula_activation_bytes: float
    peak_allocated_gb: float | None = None
    peak_reserved_gb: float | None = None
    notes: list[str]
    measured: Measured | None = Field(description="The block to paste under the workload.")
