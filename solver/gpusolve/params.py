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
    ParamSpec(
        "mfu_floor", float, 0.30, "MFU below which a layout is called misconfigured.", "H12", 0, 1
    ),
    ParamSpec(
        "bytes_per_param_convention",
        int,
        18,
        "Model-state bytes per parameter for mixed-precision AdamW: 18 keeps an fp32 "
        "gradient-accumulation buffer (Megatron-LM requires it for bf16; DeepSpeed's bf16 "
        "optimizer and FSDP with fp32 reduce do the same), 16 reduces 16-bit gradients "
        "(the ZeRO paper's K = 12 convention).",
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
    ParamSpec(
        "dp_comm_overlap",
        bool,
        True,
        "Gradient buckets are reduced during the last micro-batch's backward and parameters "
        "gathered behind the next forward (PyTorch DDP/FSDP, Megatron --overlap-grad-reduce).",
        "H08",
    ),
    ParamSpec(
        "tp_comm_overlap",
        str,
        "backward",
        "Tensor-parallel collectives hidden behind GEMMs: none, backward (under the weight-"
        "gradient GEMMs, Megatron's default since 2022) or full (Transformer Engine userbuffers).",
        "H09",
        choices=("none", "backward", "full"),
    ),
    ParamSpec(
        "ep_comm_overlap",
        bool,
        False,
        "Expert-parallel all-to-alls hidden behind the MoE layer's compute (DeepSeek DualPipe).",
        "H08",
    ),
    ParamSpec(
        "runtime_overhead_gb",
        float,
        1.0,
        "CUDA context, kernels and cuBLAS workspace per GPU, GB (PyTorch 2.1 on A100: 0.92 GiB; "
        "ml-engineering training/performance 'Preloaded CUDA kernels memory usage': 0.5-2 GiB).",
        "H29",
        0,
        20,
    ),
    ParamSpec(
        "nccl_overhead_gb",
        float,
        1.5,
        "NCCL communicator buffers per GPU when a layout has more than one GPU, GB "
        "(ml-engineering: '~1-2GiB of GPU memory taken away just to initialize').",
        "H29",
        0,
        20,
    ),
    ParamSpec(
        "max_nodes",
        int,
        100000,
        "Largest number of servers one job may span; by default what the sites can hold.",
        "H21",
        1,
        100000,
    ),
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
    mfu_floor: float = 0.30
    bytes_per_param_convention: int = 18
    comm_threshold: float = 0.15
    checkpoint_interval_steps: int = 1000
    checkpoint_stall_max_fraction: float = 0.05
    thumb_factor_full_finetune: float = 20.0
    thumb_factor_lora: float = 6.0
    thumb_factor_inference: float = 2.0
    min_cpu_pcie_lanes: int = 64
    min_host_ram_gb: float = 512.0
    min_cpu_ghz: float = 2.5
    long_training_hours: float = 168.0
    dp_comm_overlap: bool = True
    tp_comm_overlap: str = "backward"
    ep_comm_overlap: bool = False
    runtime_overhead_gb: float = 1.0
    nccl_overhead_gb: float = 1.5
    max_nodes: int = 100000
    allow_multi_node: bool = True

    def with_values(self, **values: Any) -> Params:
        return replace(self, **values)


REMOVED: dict[str, str] = {
    "mfu": "MFU is now computed from the step's parts; give a measured run (`measured:`) "
    "to calibrate it",
    "multi_node_penalty": "multi-node cost now comes from the collectives on the fabric",
    "zero3_penalty": "ZeRO-3's cost now comes from its parameter gathers",
    "recompute_time_overhead": "recomputation is now charged as the FLOPs it reruns",
    "comm_overlap": "use dp_comm_overlap (true/false) and tp_comm_overlap",
    "inference_efficiency": "decode runs at the card family's measured streaming bandwidth "
    "and GEMM rate (estimate/efficiency.py)",
}


def check_value(name: str, value: Any) -> Any:
    """Coerce and range-check one value; raise ValueError with a sentence a user can act on."""
    spec = SPEC_BY_NAME.get(name)
    if spec is None and name in REMOVED:
        raise ValueError(f"parameter {name} no longer exists: {REMOVED[name]}")
    if spec is None:
        known = ", ".join(sorted(SPEC_BY_NAME))
        raise ValueError(f"unknown parameter {name!r}; known parameters: {known}")
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"parameter {name} takes true or false, not {value!r}")
        return value
    if spec.kind is str:
        if not isinstance(value, str) or (spec.choices and value not in spec.choices):
            raise ValueError(
                f"parameter {name} takes one of {', '.join(spec.choices or ())}, not {value!r}"
            )
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
