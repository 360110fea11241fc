"""Requirements as validated models: a workload (training by default; inference gets a
throughput target instead of tokens), a workload of a named model, the requirements
holding some, and a layout dict as the rules see it."""

from __future__ import annotations

from typing import Any

from gpusolve.models.requirements import (
    InferenceWorkload,
    ModelShape,
    Requirements,
    Workload,
    make_workload,
)


def workload(
    name: str = "w", kind: str = "full_finetune", params_b: float = 7.0, **kw: Any
) -> Workload:
    data: dict[str, Any] = {"name": name, "kind": kind, "model": {"params_b": params_b}}
    if kind == "inference":
        data["target_tokens_per_s"] = 1000
    else:
        data["tokens"] = 1e9
    model = kw.pop("model", None)
    if model:
        data["model"].update(model)
    data.update(kw)
    return make_workload(data)


def preset_workload(preset: str, **fields: Any) -> Workload:
    """A workload of a named model (`model: {preset: ...}`), pretraining unless `kind` says
    otherwise; `fields` as in the requirements file, `model` included."""
    data: dict[str, Any] = {"name": "w", "kind": "pretrain", "model": ModelShape(preset=preset)}
    data.update(fields)
    return make_workload(data)


def requirements(*workloads: Workload, **kw: Any) -> Requirements:
    data: dict[str, Any] = {"workloads": [w.model_dump(exclude_none=True) for w in workloads]}
    data.update(kw)
    return Requirements.model_validate(data)


LAYOUT: dict[str, Any] = {
    "nodes": 1,
    "gpus": 8,
    "tp": 1,
    "pp": 1,
    "dp": 8,
    "memory_per_gpu_gb": 50,
    "card_memory_gb": 85.5,
    "usable_memory_gb": 68.4,
    "comm_fraction": 0.05,
}


def layout(**kw: Any) -> dict[str, Any]:
    return {**LAYOUT, **kw}


def deepseek_v3_service(**over: object) -> InferenceWorkload:
    """DeepSeek-V3 in FP8 serving 256 sequences of 2,000/500 tokens within 50 ms TPOT and
    3 s TTFT, disaggregated only unless `over` says otherwise."""
    w = make_workload(
        {
            "name": "ds",
            "kind": "inference",
            "model": ModelShape(preset="deepseek-v3"),
            "precision": "fp8",
            "prompt_tokens": 2000,
            "output_tokens": 500,
            "concurrency": 256,
            "tpot_ms": 50,
            "ttft_ms": 3000,
            "disaggregation": "only",
            **over,
        }
    )
    assert isinstance(w, InferenceWorkload)
    return w
