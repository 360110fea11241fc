"""The named model parameters that rules may `set` and the physics reads.

One registry, so a rule file naming an unknown parameter is an input error and every
default carries the heuristic it comes from. Values are plain Python (no pydantic) because
this sits on the hot path of rule evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
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


def _param(
    default: Any,
    doc: str,
    source: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A `Params` field with its documentation, heuristic and range: declared once."""
    return field(
        default=default,
        metadata={"doc": doc, "source": source, "range": (minimum, maximum), "choices": choices},
    )


@dataclass(frozen=True)
class Params:
    """Resolved parameter values for one workload (defaults, then rules, then the user)."""

    headroom: float = _param(
        0.2, "Fraction of each GPU's memory kept free.", "H29", minimum=0, maximum=0.9
    )
    mfu_floor: float = _param(
        0.3, "MFU below which a layout is called misconfigured.", "H12", minimum=0, maximum=1
    )
    bytes_per_param_convention: int = _param(
        18,
        "Model-state bytes per parameter for mixed-precision AdamW, by optimizer: 16, 16-bit "
        "gradients reduced (the ZeRO paper's K = 12 convention); 18, Megatron-LM's fp32 main "
        "gradients (--accumulate-allreduce-grads-in-fp32, required for bf16; with the "
        "distributed optimizer 6 + 12/d, Megatron's dist_optimizer docs; FSDP with fp32 reduce "
        "the same); 20, DeepSpeed's BF16_Optimizer (bf16 gradients plus an fp32 accumulation "
        "buffer, both unsharded under ZeRO-1: 8 + 12/d).",
        "H05",
        choices=("16", "18", "20"),
    )
    comm_threshold: float = _param(
        0.15,
        "Communication above this fraction of step time makes a layout communication-bound.",
        "H11",
        minimum=0,
        maximum=1,
    )
    checkpoint_interval_steps: int = _param(
        1000, "Steps between checkpoint saves.", "H16", minimum=1
    )
    checkpoint_stall_max_fraction: float = _param(
        0.05,
        "Largest share of training time that synchronous checkpoint saves may stall.",
        "H16",
        minimum=0,
        maximum=1,
    )
    thumb_factor_full_finetune: float = _param(
        20.0,
        "Rule-of-thumb GB per billion parameters, full fine-tune (12-20).",
        "H30",
        minimum=1,
        maximum=100,
    )
    thumb_factor_lora: float = _param(
        6.0, "Rule-of-thumb GB per billion, LoRA (4-6).", "H30", minimum=0.5, maximum=50
    )
    thumb_factor_inference: float = _param(
        2.0, "Rule-of-thumb GB per billion, inference (2-4).", "H30", minimum=0.5, maximum=50
    )
    min_cpu_pcie_lanes: int = _param(64, "Host PCIe lanes floor.", "H20", minimum=0)
    min_host_ram_gb: float = _param(512.0, "Host RAM floor, GB.", "H20", minimum=0)
    min_cpu_ghz: float = _param(2.5, "Host CPU clock floor, GHz.", "H20", minimum=0)
    long_training_hours: float = _param(
        168.0, "A run at least this long counts as 'long training' (H17, H41).", "H41", minimum=1
    )
    steady_use_fraction: float = _param(
        0.5,
        "Training whose runs keep a layout busy at least this share of the horizon's hours is "
        "steady (buy, H42); below it, demand is occasional (rent). A threshold chosen here.",
        "H42",
        minimum=0,
        maximum=1,
    )
    dp_comm_overlap: bool = _param(
        True,
        "Gradient buckets are reduced during the last micro-batch's backward and parameters "
        "gathered behind the next forward (PyTorch DDP/FSDP, Megatron --overlap-grad-reduce).",
        "H08",
    )
    tp_comm_overlap: str = _param(
        "backward",
        "Tensor-parallel collectives hidden behind GEMMs: none, backward (under the weight-"
        "gradient GEMMs, Megatron's default since 2022) or full (Transformer Engine userbuffers).",
        "H09",
        choices=("none", "backward", "full"),
    )
    ep_comm_overlap: bool = _param(
        False,
        "Expert-parallel all-to-alls hidden behind the MoE layer's compute (DeepSeek DualPipe).",
        "H08",
    )
    runtime_overhead_gb: float = _param(
        1.0,
        "CUDA context, kernels and cuBLAS workspace per GPU, GB (PyTorch 2.1 on A100: 0.92 GiB; "
        "ml-engineering training/performance 'Preloaded CUDA kernels memory usage': 0.5-2 GiB).",
        "H29",
        minimum=0,
        maximum=20,
    )
    nccl_overhead_gb: float = _param(
        1.5,
        "NCCL communicator buffers per GPU when a layout has more than one GPU, GB (ml-"
        "engineering: '~1-2GiB of GPU memory taken away just to initialize').",
        "H29",
        minimum=0,
        maximum=20,
    )
    mfu_ceiling: float = _param(
        0.6,
        "MFU above which a measured run is suspect (above H12's healthy 40-60% band).",
        "H12",
        minimum=0,
        maximum=1,
    )
    profile_compute_sm_min: float = _param(
        0.9,
        "A profiled GPU with SM activity at least this (and memory below "
        "profile_compute_mem_max) is compute-bound.",
        "H11",
        minimum=0,
        maximum=1,
    )
    profile_compute_mem_max: float = _param(
        0.5,
        "Memory-controller activity below which high SM activity is compute-bound.",
        "H11",
        minimum=0,
        maximum=1,
    )
    profile_membw_mem_min: float = _param(
        0.8,
        "Memory-controller activity from which a profiled GPU is memory-bandwidth-bound "
        "(H11: mem about 90% with sm about 60%).",
        "H11",
        minimum=0,
        maximum=1,
    )
    profile_stall_sm_max: float = _param(
        0.6,
        "SM activity below which a busy GPU waits on input or communication (H04: >90% is "
        "saturated; H11's memory-bound case sits at 60%).",
        "H04",
        minimum=0,
        maximum=1,
    )
    thermal_warning_c: float = _param(
        85.0, "GPU temperature above which the boost clock drops.", "H17", minimum=0, maximum=150
    )
    clock_drop_fraction: float = _param(
        0.1,
        "An SM clock under load this far below the run's own highest loaded clock counts as a "
        "clock drop (throttling).",
        "H17",
        minimum=0,
        maximum=1,
    )
    checkpoint_copies_kept: int = _param(
        3,
        "Checkpoints kept on the site's storage per training workload (the latest ones to "
        "resume from; a stated assumption, as NeMo's ModelCheckpoint save_top_k: 3). Storage "
        "is sized as this many full checkpoints plus the dataset.",
        "H16",
        minimum=1,
        maximum=1000,
    )
    storage_fill_fraction: float = _param(
        0.9,
        "Most a site's shared storage is filled: nodes are bought for what the workloads "
        "keep divided by this share. Oracle Solaris 11.4 ZFS, 'Storage Pool Practices for "
        "Performance': keep pool capacity below 90% for best performance (up to ~95% for "
        "large files written once and removed in bulk, as checkpoints are).",
        "H16",
        minimum=0.1,
        maximum=1,
    )
    max_nodes: int = _param(
        100000,
        "Largest number of servers one job may span; by default what the sites can hold.",
        "H21",
        minimum=1,
        maximum=100000,
    )
    allow_multi_node: bool = _param(True, "Whether a job may span several servers at all.", "H21")
    rack_load_fraction: float = _param(
        0.8,
        "Share of a rack's contracted kW that servers may draw continuously; the rest is "
        "reserved (switches, PDUs, headroom). NEC 210.19(A)(1)/210.20(A): a branch circuit "
        "carries a continuous load at most 80% of its rating; colocation contracts commonly "
        "cap sustained draw at 80% of the breaker (Uptime Institute practice). A colo offer "
        "that states its own limit (usable_kw) overrides it.",
        "H35",
        minimum=0.1,
        maximum=1,
    )
    rack_reserved_units: int = _param(
        4,
        "Rack units per rack kept free of servers: a 1U top-of-rack switch, 1U of compute-"
        "fabric leaf/spine share and 2U of PDU and cable management (a stated assumption: "
        "vendor rack designs reserve 2-4U per rack for ToR and cabling). A colo offer that "
        "states its own (reserved_units) overrides it.",
        "H35",
        minimum=0,
        maximum=20,
    )
    idle_power_fraction: float = _param(
        0.25,
        "Wall power of an owned server with no work running, as a share of its peak, where "
        "the catalogue gives no idle_power_kw (energy by duty). Assumption, confidence D: an "
        "idle Hopper SXM GPU reads ~60-75 W of its 700 W in nvidia-smi and the host keeps "
        "~1.5-2 kW of a 10.2 kW DGX H100 on (catalog-facts §2b gives the peaks).",
        "H42",
        minimum=0,
        maximum=1,
    )
    server_useful_life_months: int = _param(
        60,
        "Months over which an owned server's value falls straight-line to its salvage share "
        "(residual value at the horizon). Amazon shortened servers' useful life from six to "
        "five years from 2025 for the pace of AI hardware (Amazon.com 10-K for 2024, note 1).",
        "H42",
        minimum=1,
        maximum=240,
    )
    server_salvage_fraction: float = _param(
        0.05,
        "Share of its price an owned server keeps at the end of its useful life: the "
        "customary 3-5% 预计净残值率 of Chinese fixed-asset accounting, at its top.",
        "H42",
        minimum=0,
        maximum=0.99,
    )

    def with_values(self, **values: Any) -> Params:
        return replace(self, **values)


_KINDS: dict[str, type] = {"float": float, "int": int, "bool": bool, "str": str}
SPECS: tuple[ParamSpec, ...] = tuple(
    ParamSpec(
        f.name,
        _KINDS[str(f.type)],
        f.default,
        f.metadata["doc"],
        f.metadata["source"],
        f.metadata["range"][0],
        f.metadata["range"][1],
        f.metadata["choices"],
    )
    for f in fields(Params)
)
SPEC_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in SPECS}


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


# The largest magnitude any numeric parameter takes: 2^53, beyond which whole numbers are
# not exact as doubles (the physics reads every parameter as one). No parameter (steps,
# hours, GB, fractions, factors) has a real value anywhere near it; without this bound a
# 400-digit `set:` value was an OverflowError (exit 70) instead of a located error.
MAX_MAGNITUDE = 2**53


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
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"parameter {name} takes a finite number, not {value!r}")
    if abs(value) > MAX_MAGNITUDE:
        shown = f"{value:.3g}" if isinstance(value, float) else f"about 2^{value.bit_length()}"
        raise ValueError(
            f"parameter {name} must be at most {MAX_MAGNITUDE:,} in size (2^53, beyond which "
            f"whole numbers are not exact as doubles), got {shown}"
        )
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
