"""Workload physics: memory per GPU, FLOPs, time, communication, checkpoints.

Pure and price-free: no I/O, no solver. SI units inside (bytes, FLOP, seconds); GB means
10^9 bytes wherever a figure is shown. The planner calls:

    resolve_arch(model) -> Arch                       # shapes.py (presets, coarse path)
    evaluate(workload, hw, layout, params) -> ConfigEstimate        # layout.py
    search_layouts(workload, hw, params, *, max_nodes, whole_nodes=True) -> SearchResult

Formulas and their sources are documented in each module: memory.py (ZeRO,
Korthikanti et al. 2022, KV cache), compute.py (6·N·D, roofline), comm.py (ring
collectives), checkpoint.py (H16), thumb.py (H05, H30 rules of thumb).
"""

from __future__ import annotations

from gpusolve.estimate.checkpoint import CheckpointSize, checkpoint_stall, training_checkpoint
from gpusolve.estimate.comm import Links, StepComm
from gpusolve.estimate.layout import (
    BOTTLENECKS,
    CHECKPOINTINGS,
    SHARDINGS,
    ConfigEstimate,
    Hardware,
    Layout,
    evaluate,
    whole_model_memory,
)
from gpusolve.estimate.memory import MemoryBreakdown, ModelStates, StateBytes
from gpusolve.estimate.presets import PRESETS, Preset, find_preset, preset_names
from gpusolve.estimate.search import SearchResult, search_layouts
from gpusolve.estimate.shapes import Arch, UnknownPreset, resolve_arch
from gpusolve.estimate.thumb import ThumbFigures, thumb_figures

__all__ = [
    "BOTTLENECKS",
    "CHECKPOINTINGS",
    "PRESETS",
    "SHARDINGS",
    "Arch",
    "CheckpointSize",
    "ConfigEstimate",
    "Hardware",
    "Layout",
    "Links",
    "MemoryBreakdown",
    "ModelStates",
    "Preset",
    "SearchResult",
    "StateBytes",
    "StepComm",
    "ThumbFigures",
    "UnknownPreset",
    "checkpoint_stall",
    "evaluate",
    "find_preset",
    "preset_names",
    "resolve_arch",
    "search_layouts",
    "thumb_figures",
    "training_checkpoint",
    "whole_model_memory",
]
