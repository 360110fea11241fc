"""`evaluate`: one workload on one hardware type in one parallel layout, and the whole-job
memory figure the rules of thumb are compared with. Dispatches to training.py or serving.py.
"""

from __future__ import annotations

from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import CHECKPOINTINGS, SHARDINGS, ConfigEstimate, Layout
from gpusolve.estimate.memory import MemoryBreakdown
from gpusolve.estimate.serving import serving_memory
from gpusolve.estimate.servingestimate import evaluate_serving
from gpusolve.estimate.shapes import resolve_arch
from gpusolve.estimate.training import evaluate_training, training_memory
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, Workload


def evaluate(workload: Workload, hw: Hardware, layout: Layout, params: Params) -> ConfigEstimate:
    """Estimate one layout. Never raises for an infeasible layout: it says why in `reasons`.
    Raises ValueError only for a malformed layout (a degree below 1, an unknown name, dp
    for inference or replicas for training)."""
    degrees = (layout.nodes, layout.tp, layout.pp, layout.dp, layout.replicas, layout.vp)
    if min(*degrees, layout.cp) < 1:
        raise ValueError(f"layout degrees must be at least 1: {layout}")
    if layout.micro_batch < 1 or layout.grad_accum < 1 or layout.ep < 1:
        raise ValueError(f"micro_batch, grad_accum and ep must be at least 1: {layout}")
    if layout.sharding not in SHARDINGS or layout.checkpointing not in CHECKPOINTINGS:
        raise ValueError(f"unknown sharding or checkpointing: {layout}")
    serving = isinstance(workload, InferenceWorkload)
    if serving and layout.dp != 1:
        raise ValueError(f"inference layouts scale with replicas, dp must be 1: {layout}")
    if not serving and layout.replicas != 1:
        raise ValueError(f"training layouts scale with dp, replicas must be 1: {layout}")
    arch = resolve_arch(workload.model)
    if isinstance(workload, InferenceWorkload):
        return evaluate_serving(workload, arch, hw, layout, params)
    return evaluate_training(workload, arch, hw, layout, params)


def whole_model_memory(workload: Workload, params: Params) -> MemoryBreakdown:
    """The formula's memory for the whole job on one (unbounded) GPU: no parallelism, no
    sharding, the workload's own micro-batch and recomputation (none if unset); inference
    holds `concurrency` (else 1) sequences at the mean live context. This is the figure
    printed next to the rules of thumb (H05, H30), which are whole-model figures too."""
    arch = resolve_arch(workload.model)
    if isinstance(workload, InferenceWorkload):
        one = Layout(nodes=1, tp=1, pp=1, dp=1, micro_batch=workload.concurrency or 1)
        return serving_memory(workload, arch, one, params)
    layout = Layout(
        nodes=1,
        tp=1,
        pp=1,
        dp=1,
        checkpointing=workload.gradient_checkpointing or "none",
        micro_batch=workload.micro_batch,
    )
    return training_memory(workload, arch, 1, layout, params)
