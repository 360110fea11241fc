"""Workload physics: memory per GPU, the step time from its parts, serving, checkpoints.

Pure and price-free: no I/O, no solver. SI units inside (bytes, FLOP, seconds); GB means
10^9 bytes wherever a figure is shown. The planner calls:

    resolve_arch(model) -> Arch                       # shapes.py (presets, coarse path)
    evaluate(workload, hw, layout, params) -> ConfigEstimate        # evaluation.py
    search_layouts(workload, hw, params, *, max_nodes, whole_nodes=True, every_size=False)
        -> SearchResult

Formulas and their sources are documented in each module: memory.py (ZeRO's model states,
sharding, the memory savings), activations.py (Korthikanti et al. 2022, the KV cache),
stageparams.py (what each pipeline rank holds), stacks.py (what a software stack keeps and
streams beyond the fused reference), steptime.py (the step: pipeline pace and bubble,
recomputation, optimizer) with layerwork.py (one layer's GEMMs, attention and streaming at the
card's rates), dpcomm.py (data-parallel traffic), collectives.py (all-reduce, gathers,
all-to-all over a group's links) and stepshape.py (what a step is timed from, and its parts),
efficiency.py (what each card family achieves, sourced), hardware.py (the links each group
uses), training.py with trainchecks.py and serving.py with servingestimate.py (the two kinds
of workload; trainshape.py reads a training layout for the formulas and for calibration.py),
goodput.py (failures, evaluation, ramp-up), checkpoint.py (H16), rules_of_thumb.py (H05,
H30); the layout search in search.py (searchcore.py, searchtrain.py, searchserve.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpusolve.estimate.checkpoint import CheckpointSize, checkpoint_stall, training_checkpoint
    from gpusolve.estimate.evaluation import evaluate, whole_model_memory
    from gpusolve.estimate.hardware import Hardware
    from gpusolve.estimate.layout import (
        BOTTLENECKS,
        CHECKPOINTINGS,
        SHARDINGS,
        ConfigEstimate,
        Layout,
        ServingFigures,
    )
    from gpusolve.estimate.memory import MemoryBreakdown, ModelStates, StateBytes
    from gpusolve.estimate.presets import PRESETS, Preset, find_preset, preset_names
    from gpusolve.estimate.rules_of_thumb import ThumbFigures, thumb_figures
    from gpusolve.estimate.search import SearchResult, search_layouts
    from gpusolve.estimate.shapes import Arch, UnknownPreset, resolve_arch
    from gpusolve.estimate.stepshape import StepBreakdown

# Each name of the package's interface and the module that defines it, imported on first
# use: a plan whose layout searches were kept between runs needs the layouts' classes,
# never the search, the step-time model or the serving model behind them.
_HOME = {
    "CheckpointSize": "checkpoint",
    "checkpoint_stall": "checkpoint",
    "training_checkpoint": "checkpoint",
    "evaluate": "evaluation",
    "whole_model_memory": "evaluation",
    "Hardware": "hardware",
    "BOTTLENECKS": "layout",
    "CHECKPOINTINGS": "layout",
    "SHARDINGS": "layout",
    "ConfigEstimate": "layout",
    "Layout": "layout",
    "ServingFigures": "layout",
    "MemoryBreakdown": "memory",
    "ModelStates": "memory",
    "StateBytes": "memory",
    "PRESETS": "presets",
    "Preset": "presets",
    "find_preset": "presets",
    "preset_names": "presets",
    "ThumbFigures": "rules_of_thumb",
    "thumb_figures": "rules_of_thumb",
    "SearchResult": "search",
    "search_layouts": "search",
    "Arch": "shapes",
    "UnknownPreset": "shapes",
    "resolve_arch": "shapes",
    "StepBreakdown": "stepshape",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # With a non-empty fromlist, __import__ gives the submodule itself.
    value = getattr(__import__(f"{__name__}.{home}", fromlist=[name]), name)
    globals()[name] = value
    return value


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
    "MemoryBreakdown",
    "ModelStates",
    "Preset",
    "SearchResult",
    "ServingFigures",
    "StateBytes",
    "StepBreakdown",
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
