"""The margin a plan buys above each workload's target: what the estimate may be off by.

A plan sized to the estimate alone lands a fraction of a percent above its target (4,012
tokens/s for 4,000), yet the estimate is validated only to within a band: a buyer who
follows it under-buys whenever the model is optimistic. So the candidates stage sizes each
workload for target x (1 + margin) tokens/s (or users at once), and a training run to
finish by deadline / (1 + margin) hours of the estimate.

The default per kind of workload is the validation suite's gate on throughput (the
relative error every asserted published case stays within; `tests/support/
validation_cases.py`, `tests/support/validation_serving.py`, benchmarks/README.md). With
estimate = published x (1 + e) and |e| <= gate, buying estimate >= target x (1 + gate)
gives published >= target: the margin is the gate itself.

* Training (pretrain, full fine-tune, LoRA, QLoRA): 0.15, the gate of Narayanan et al.
  2021 Table 1 (TFLOP/s per GPU), Korthikanti et al. 2022 Table 5 (s per iteration), NeMo
  24.07 DGX-H100 FP8 pretraining and Llama 3 405B Table 4.
* Serving: 0.20, the gate of TensorRT-LLM's Llama 3.3 70B and Qwen3-235B throughput at load
  (perf-overview, H100/H200) and gpt-fast's batch-1 decode on A100.

`margin:` in the requirements (for every workload) or on one workload overrides it; 0 sizes
to the estimate as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate import ConfigEstimate
from gpusolve.models.plan import MarginMiss
from gpusolve.models.requirements import InferenceWorkload, Requirements, Workload

TRAINING_MARGIN = 0.15  # validation gate on training throughput (see the module docstring)
SERVING_MARGIN = 0.20  # validation gate on serving throughput at load


def default_margin(w: Workload) -> float:
    """The sourced default for this kind of workload."""
    return SERVING_MARGIN if isinstance(w, InferenceWorkload) else TRAINING_MARGIN


def margin_of(w: Workload, reqs: Requirements) -> float:
    """The margin a workload is sized with: its own, else the requirements', else the
    default for its kind."""
    if w.margin is not None:
        return w.margin
    if reqs.margin is not None:
        return reqs.margin
    return default_margin(w)


def with_margin(w: Workload, margin: float) -> Workload:
    """The workload as the candidates stage sizes it: serving demand x (1 + margin) (its
    tokens/s, users at once and request rate), a training deadline / (1 + margin)."""
    if margin == 0:
        return w
    factor = 1.0 + margin
    if isinstance(w, InferenceWorkload):
        return w.model_copy(update=w.demand_scaled(factor))
    if w.deadline_hours is None:
        return w
    return w.model_copy(update={"deadline_hours": w.deadline_hours / factor})


def sized(reqs: Requirements) -> Requirements:
    """The requirements with every workload at its margin (what the options are built for)."""
    workloads = [with_margin(w, margin_of(w, reqs)) for w in reqs.workloads]
    return reqs.model_copy(update={"workloads": workloads})


def margin_miss(
    w: Workload, candidate: str, fastest: ConfigEstimate, written_deadline_h: float | None
) -> MarginMiss | None:
    """`candidate` as a margin miss when its fastest layout, which misses `w`'s deadline as
    sized (less the margin), meets the deadline as written; None otherwise."""
    hours = (fastest.time_to_train_s or 0.0) / 3600
    sized_h = w.deadline_hours
    if not written_deadline_h or not sized_h or hours <= 0 or hours > written_deadline_h:
        return None
    return MarginMiss(
        workload=w.name,
        candidate=candidate,
        servers=fastest.nodes,
        gpus=fastest.gpus,
        hours=round(hours, 2),
        deadline_hours=written_deadline_h,
        margin=round(written_deadline_h / sized_h - 1, 4),
        spare=round(written_deadline_h / hours - 1, 4),
    )


def held_back(
    misses: list[MarginMiss], offered: set[tuple[str, str]], most: int = 3
) -> list[MarginMiss]:
    """Per workload, the `most` candidates the margin alone keeps out, the nearest to it
    first: each candidate once (its largest spare), none the plan could choose anyway
    (`offered`: (workload, candidate) pairs with an option)."""
    best: dict[tuple[str, str], MarginMiss] = {}
    for m in misses:
        key = (m.workload, m.candidate)
        if key not in offered and (key not in best or m.spare > best[key].spare):
            best[key] = m
    out: list[MarginMiss] = []
    for workload in dict.fromkeys(m.workload for m in misses):
        mine = sorted((m for m in best.values() if m.workload == workload), key=lambda m: -m.spare)
        out += mine[:most]
    return out


@dataclass(frozen=True)
class Against:
    """What a deployment delivers against its workload's target as written."""

    target: float | None  # tokens/s, users at once, or deadline hours; None: no target
    unit: str
    spare: float | None  # delivered / target - 1 (deadline / hours - 1 for training)


def against_target(w: Workload, estimate: ConfigEstimate) -> Against:
    """Spare capacity of one deployment against the target the buyer wrote (not the
    margin-sized one). Serving by tokens/s: delivered tokens/s; by users: the sequences
    its replicas hold at the latency targets; training: its run against the deadline."""
    if isinstance(w, InferenceWorkload):
        if w.target_tokens_per_s is not None:
            spare = estimate.tokens_per_s / w.target_tokens_per_s - 1
            return Against(w.target_tokens_per_s, "tokens/s", spare)
        assert w.concurrency is not None  # the model requires one of the two
        held = _sequences_held(estimate)
        users = float(w.concurrency)
        return Against(users, "users", held / users - 1 if held is not None else None)
    hours = estimate.time_to_train_h
    if w.deadline_hours is None or not hours:
        return Against(None, "", None)
    return Against(w.deadline_hours, "h", w.deadline_hours / hours - 1)


def _sequences_held(estimate: ConfigEstimate) -> int | None:
    """Sequences the replicas can decode at once within memory and the latency targets
    (aggregated); what the disaggregated pools were sized for otherwise."""
    serving = estimate.serving
    if serving is None:
        return None
    if serving.disaggregated is not None:
        return serving.sequences or None
    return serving.max_batch * estimate.layout.replicas
