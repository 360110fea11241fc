"""What every launch file shares: the file itself, the vendor's device variable, and the
shell text (every value quoted; every variable a user must set named with a message bash
can parse)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Deployment


@dataclass(frozen=True)
class LaunchFile:
    path: str  # relative to the launch folder
    text: str


@dataclass(frozen=True)
class Vendor:
    """How one vendor's accelerators are picked per process and which engine builds run
    them. The variables are the vendors' own: CUDA; ROCm's HIP_VISIBLE_DEVICES (AMD, and
    Hygon's DTK, a ROCm port); vllm-ascend's and CANN's ASCEND_RT_VISIBLE_DEVICES;
    Cambricon's MLU_VISIBLE_DEVICES (CNToolkit); Kunlunxin's XPU_VISIBLE_DEVICES (XRE)."""

    visible_devices: str
    note: str = ""
    sglang_device: str | None = None  # SGLang's --device where it is not CUDA


VENDORS = {
    "nvidia": Vendor("CUDA_VISIBLE_DEVICES"),
    "amd": Vendor("HIP_VISIBLE_DEVICES", "ROCm builds of vLLM, SGLang and PyTorch"),
    "hygon": Vendor("HIP_VISIBLE_DEVICES", "Hygon DTK builds of PyTorch, vLLM and DeepSpeed"),
    "huawei": Vendor(
        "ASCEND_RT_VISIBLE_DEVICES",
        "torch_npu with CANN; vLLM through the vllm-ascend plugin; Megatron-LM through "
        "MindSpeed (same arguments); SGLang with --device npu",
        sglang_device="npu",
    ),
    "cambricon": Vendor("MLU_VISIBLE_DEVICES", "Cambricon's torch_mlu and its vLLM port"),
    "kunlunxin": Vendor("XPU_VISIBLE_DEVICES", "Kunlunxin's XPU builds of PyTorch and vLLM"),
}
OTHER_VENDOR = Vendor("CUDA_VISIBLE_DEVICES", "the vendor's own builds of the engines")


def vendor_of(d: Deployment, catalog: Catalog) -> Vendor:
    card = catalog.cards.get(d.card)
    return VENDORS.get(card.vendor.lower(), OTHER_VENDOR) if card else OTHER_VENDOR


def architecture_of(d: Deployment, catalog: Catalog) -> str | None:
    card = catalog.cards.get(d.card)
    return str(card.architecture) if card and card.architecture else None


def gpus_per_node(d: Deployment) -> int:
    if d.pools is not None:
        return d.pools.gpus_per_node
    return max(1, d.gpus // max(1, d.servers))


# A hint inside ${VAR:?hint} is a bash word: a quote or a brace in it breaks the script.
_SAFE_HINT = re.compile(r"[A-Za-z0-9 ,.:/()_+-]*")


def required(name: str, hint: str) -> str:
    """A variable the user must set, double-quoted, with bash's own error when unset."""
    assert _SAFE_HINT.fullmatch(hint), hint
    return f'"${{{name}:?{hint}}}"'


def quoted(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def one_flag_a_line(args: list[str]) -> str:
    """Arguments as shell words, one flag and its values a line (read with shlex rules)."""
    lines: list[str] = []
    for a in args:
        if a.startswith("--") or not lines:
            lines.append(shlex.quote(a))
        else:
            lines[-1] += " " + shlex.quote(a)
    return "\n".join(lines) + "\n"


def script(lines: list[str], directives: list[str] | None = None) -> str:
    """A bash script; Slurm reads #SBATCH lines only before the first command."""
    head = ["#!/usr/bin/env bash", *(directives or []), "set -euo pipefail"]
    return "\n".join([*head, *lines]) + "\n"
