"""The named model parameters that rules may `set` and the physics reads.

One registry, so a rule file naming an unknown parameter is an input error and every
default carries the heuristic it comes from. Values are plain Python (no pydantic) because
this sits on the hot path of rule evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: type
    default: Any
    doc: str
    source: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None


SPECS: tuple[ParamSpec, ...] = (
    ParamSpec("headroom", float, 0.20, "Fraction of each GPU's memory kept free.", "H29", 0, 0.9),
    ParamSpec("mfu", float, 0.40, "Model FLOPs utilisation assumed for training.", "H12", 0.01, 1),
    ParamSpec(
        "mfu_floor", float, 0.30, "MFU below which a layout is called misconfigured.", "H12", 0, 1
    ),
    ParamSpec(
        "inference_efficiency",
        float,
        0.60,
        "Achieved fraction of the decode roofline (bandwidth or compute) for inference.",
        "H27",
        0.01,
        1,
    ),
    ParamSpec(
        "bytes_per_param_convention",
        int,
        16,
        "Model-state bytes per parameter for mixed-precision AdamW: 16 (ZeRO/EleutherAI) "
        "or 18 (fp32 gradients, Megatron/HF).",
        "H05",
        choices=("16", "18"),
    ),
    ParamSpec(
        "comm_threshold",
        float,
        0.15,
        "Communication above this fraction of step time makes a layout communication-bound.",
        "H11",
        0,
        1,
    ),
    ParamSpec(
        "comm_overlap",
        float,
        0.5,
        "Fraction of gradient communication hidden behind backward compute.",
        "H08",
        0,
        1,
    ),
    ParamSpec(
        "zero3_penalty", float, 0.10, "Throughput lost to ZeRO-3/FSDP in one node.", "H15", 0, 0.9
    ),
    ParamSpec(
        "multi_node_penalty",
        float,
        0.05,
        "Extra throughput lost per doubling of nodes beyond one (latency, stragglers).",
        "H21",
        0,
        0.9,
    ),
    ParamSpec(
        "recompute_time_overhead",
        float,
        0.25,
        "Extra step time with full activation recomputation (document: 20-30%).",
        "H10",
        0,
        1,
    ),
    ParamSpec(
        "checkpoint_interval_steps", int, 1000, "Steps between checkpoint saves.", "H16", 1, None
    ),
    ParamSpec(
        "checkpoint_stall_max_fraction",
        float,
        0.05,
        "Largest share of training time that synchronous checkpoint saves may stall.",
        "H16",
        0,
        1,
    ),
    ParamSpec(
        "thumb_factor_full_finetune",
        float,
        20.0,
        "Rule-of-thumb GB per billion parameters, full fine-tune (12-20).",
        "H30",
        1,
        100,
    ),
    ParamSpec(
        "thumb_factor_lora", float, 6.0, "Rule-of-thumb GB per billion, LoRA (4-6).", "H30", 0.5, 50
    ),
    ParamSpec(
        "thumb_factor_inference",
        float,
        2.0,
        "Rule-of-thumb GB per billion, inference (2-4).",
        "H30",
        0.5,
        50,
    ),
    ParamSpec(
        "runtime_overhead_gb",
        float,
        1.5,
        "CUDA context, allocator and framework memory per GPU, GB.",
        "H29",
        0,
        20,
    ),
    ParamSpec("min_cpu_pcie_lanes", int, 64, "Host PCIe lanes floor.", "H20", 0, None),
    ParamSpec("min_host_ram_gb", float, 512.0, "Host RAM floor, GB.", "H20", 0, None),
    ParamSpec("min_cpu_ghz", float, 2.5, "Host CPU clock floor, GHz.", "H20", 0, None),
    ParamSpec(
        "long_training_hours",
        float,
        168.0,
        "A run at least this long counts as 'long training' (H17, H41).",
        "H41",
        1,
        None,
    ),
    ParamSpec("max_nodes", int, 64, "Largest number of servers one job may span.", "H21", 1, 4096),
    ParamSpec(
        "allow_multi_node",
        bool,
        True,
        "Whether a job may span several servers at all.",
        "H21",
    ),
)

SPEC_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in SPECS}


@dataclass(frozen=True)
class Params:
    """Resolved parameter values for one workload (defaults, then rules, then the user)."""

    headroom: float = 0.20
    mfu: float = 0.40
    mfu_floor: float = 0.30
    inference_efficiency: float = 0.60
    bytes_per_param_convention: int = 16
    comm_threshold: float = 0.15
    comm_overlap: float = 0.5
    zero3_penalty: float = 0.10
    multi_node_penalty: float = 0.05
    recompute_time_overhead: float = 0.25
    checkpoint_interval_steps: int = 1000
    checkpoint_stall_max_fraction: float = 0.05
    thumb_factor_full_finetune: float = 20.0
    thumb_factor_lora: float = 6.0
    thumb_factor_inference: float = 2.0
    runtime_overhead_gb: float = 1.5
    min_cpu_pcie_lanes: int = 64
    min_host_ram_gb: float = 512.0
    min_cpu_ghz: float = 2.5
    long_training_hours: float = 168.0
    max_nodes: int = 64
    allow_multi_node: bool = True

    def with_values(self, **values: Any) -> Params:
        return replace(self, **values)


def check_value(name: str, value: Any) -> Any:
    """Coerce and range-check one value; raise ValueError with a sentence a user can act on."""
    spec = SPEC_BY_NAME.get(name)
    if spec is None:
        known = ", ".join(sorted(SPEC_BY_NAME))
        raise ValueError(f"unknown parameter {name!r}; known parameters: {known}")
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"parameter {name} takes true or false, not {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"parameter {name} takes a number, not {value!r}")
    coerced: float | int = float(value) if spec.kind is float else value
    if spec.kind is int and not float(value).is_integer():
        raise ValueError(f"parameter {name} takes a whole number, not {value!r}")
    if spec.kind is int:
        coerced = int(value)
    if spec.choices is not None and str(coerced) not in spec.choices:
        raise ValueError(f"parameter {name} takes one of {', '.join(spec.choices)}")
    if spec.minimum is not None and coerced < spec.minimum:
        raise ValueError(f"parameter {name} must be at least {spec.minimum}, got {value!r}")
    if spec.maximum is not None and coerced > spec.maximum:
        raise ValueError(f"parameter {name} must be at most {spec.maximum}, got {value!r}")
    return coerced


def _check_registry() -> None:
    declared = {f.name: f.default for f in fields(Params)}
    specs = {s.name: s.default for s in SPECS}
    if declared != specs:  # pragma: no cover - guards edits to this file
        raise AssertionError("Params fields and SPECS disagree")


_check_registry()
