"""Goodput: the time a training run takes beyond its steady state, from failures, restarts and
planned overhead.

A synchronous job stops at any interruption ("a single GPU failure may require a restart of
the entire job", Llama 3 report §3.3.4). Each one loses the work since the last checkpoint —
half an interval τ on average — and a restart R: detecting the failure, rescheduling, and
reloading the checkpoint. With λ interruptions per hour for the whole job, a run of wall time
T meets λ·T of them, so

    T = T_steady · (1 + overhead) + λ·T·(τ/2 + R)
      = T_steady · (1 + overhead) / (1 − λ·(τ/2 + R)),

and when λ·(τ/2 + R) ≥ 1 the job never finishes. Young's first-order optimum interval
(J. W. Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9))
is τ* = √(2·δ/λ) for a save of δ seconds.

Defaults (each can be replaced in the workload's `goodput:` block):
  * failures per GPU-hour: Llama 3 report (Dubey et al. 2024, §3.3.4, Table 5): 419 unexpected
    interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs =
    419 / (54 × 24 × 16,384) = 1.97e-5 per GPU-hour (one every 3 hours for that job; 78% of
    them hardware). Meta reported more than 90% effective training time for that run, which is
    a check on this model (benchmarks/validation.py), not an input;
  * restart: 10 minutes of detection and rescheduling — an assumption, stated as such (the
    Llama 3 report says automation handled all but three interruptions but gives no time);
    the checkpoint reload is added at the storage speed the checkpoint model writes at;
  * checkpoint interval: Young's τ* when it is shorter than the rules' interval
    (`checkpoint_interval_steps` × the step time, whose save stalls the steady state already
    counts) — a job that fails often saves often; the extra saves are charged as their own
    part;
  * evaluation: what the stack does by default. Megatron-LM evaluates `--eval-iters` 100
    iterations every `--eval-interval` 1,000 steps (megatron/training/arguments.py defaults),
    each a forward pass of the global batch: 100 forward passes per 1,000 steps. Hugging Face
    Trainer's `eval_strategy` defaults to "no" and torchtune's and LitGPT's fine-tuning
    recipes run none unless asked: nothing;
  * batch ramp-up (pretraining): GPT-3 "gradually increase[d] the batch size linearly from a
    small value (32k tokens) to the full value over the first 4-12 billion tokens" (Brown et
    al. 2020, App. B); the lower end, 4 B tokens, is taken for any size (an estimate). A
    linear ramp from b0 to B tokens per step over R tokens takes R·ln(B/b0)/(B − b0) steps
    where the full batch takes R/B; each extra step pays the step's fixed cost (the pipeline
    bubble, the exposed data-parallel traffic and the optimizer) that a full step amortises;
  * the workload's `overhead_share`, when given, replaces both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusolve.estimate.units import SECONDS_PER_HOUR
from gpusolve.models.parts import GoodputOut

LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384
FAILURES_PER_GPU_HOUR = LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * 24 * LLAMA3_GPUS)
FAILURE_SOURCE = (
    "Llama 3 report §3.3.4 Table 5: 419 unexpected interruptions in 54 days on 16,384 GPUs"
)
RESTART_S = 600.0  # detection + rescheduling: an assumption (see the module docstring)
MEGATRON_EVAL_ITERS = 100
MEGATRON_EVAL_INTERVAL = 1000
GPT3_RAMP_START_TOKENS = 32 * 1024
GPT3_RAMP_TOKENS = 4e9


def evaluation_s(*, steps: int, forward_s: float, stack: str) -> float:
    """Default evaluation time of a run on `stack`: forward passes of the global batch."""
    if stack != "megatron":
        return 0.0
    return steps * MEGATRON_EVAL_ITERS / MEGATRON_EVAL_INTERVAL * forward_s


def rampup_s(*, tokens: float, batch_tokens: float, fixed_s: float) -> float:
    """What GPT-3's linear batch ramp-up adds: its extra steps times each step's fixed cost."""
    b0, full = GPT3_RAMP_START_TOKENS, batch_tokens
    if full <= b0 or tokens <= GPT3_RAMP_TOKENS or fixed_s <= 0:
        return 0.0
    ramp_steps = GPT3_RAMP_TOKENS * math.log(full / b0) / (full - b0)
    return max(0.0, ramp_steps - GPT3_RAMP_TOKENS / full) * fixed_s


@dataclass(frozen=True)
class GoodputInputs:
    """The figures the loss is computed from; None takes the default."""

    failures_per_gpu_hour: float | None = None
    restart_s: float | None = None
    checkpoint_interval_s: float | None = None
    overhead_share: float | None = None
    evaluation_s: float = 0.0  # the stack's default evaluation (`evaluation_s`)
    rampup_s: float = 0.0  # the batch ramp-up's extra time (`rampup_s`)


@dataclass(frozen=True)
class Goodput:
    """Steady-state time and what a real run adds to it, seconds."""

    steady_s: float  # the modelled run: steps × step time + checkpoint stalls
    overhead_s: float  # evaluation, ramp-up and other planned time (their sum)
    extra_saves_s: float  # checkpoint saves beyond those the steady state counts
    lost_work_s: float  # work redone since the last checkpoint, over all failures
    restart_s: float  # detection, rescheduling and checkpoint reloads, over all failures
    failures: float  # expected interruptions over the run
    failures_per_gpu_hour: float
    interval_s: float  # checkpoint interval used
    optimal_interval_s: float  # Young's τ* = √(2δ/λ) (inf without failures)
    restart_each_s: float  # one restart, reload included
    source: str
    evaluation_s: float = 0.0  # of overhead_s: the stack's default evaluation
    rampup_s: float = 0.0  # of overhead_s: the batch ramp-up

    @property
    def total_s(self) -> float:
        return (
            self.steady_s + self.overhead_s + self.extra_saves_s + self.lost_work_s + self.restart_s
        )

    @property
    def fraction(self) -> float:
        """Goodput: steady-state time over the time the run really takes (1 = no loss)."""
        if not math.isfinite(self.total_s) or self.total_s <= 0:
            return 0.0
        return self.steady_s / self.total_s

    @property
    def finishes(self) -> bool:
        return math.isfinite(self.total_s)


def goodput(
    *,
    steady_s: float,
    stall_s: float,
    gpus: int,
    step_s: float,
    interval_steps: int,
    save_s: float,
    inputs: GoodputInputs = GoodputInputs(),
) -> Goodput:
    """The expected time of one run with failures, restarts and planned overhead.
    `steady_s` includes `stall_s` of saves every `interval_steps` steps of `step_s`."""
    rate = (
        FAILURES_PER_GPU_HOUR
        if inputs.failures_per_gpu_hour is None
        else inputs.failures_per_gpu_hour
    )
    source = FAILURE_SOURCE if inputs.failures_per_gpu_hour is None else "given in goodput:"
    per_s = rate * gpus / SECONDS_PER_HOUR  # interruptions per second of the job
    optimal = math.sqrt(2 * save_s / per_s) if per_s > 0 and save_s > 0 else math.inf
    if inputs.checkpoint_interval_s is not None:
        interval = inputs.checkpoint_interval_s
    else:
        interval = min(interval_steps * step_s, max(step_s, optimal))
    reload_s = save_s if math.isfinite(save_s) else 0.0
    restart_each = (RESTART_S if inputs.restart_s is None else inputs.restart_s) + reload_s
    planned = (
        (0.0, 0.0)
        if inputs.overhead_share is not None
        else (
            inputs.evaluation_s,
            inputs.rampup_s,
        )
    )
    overhead = steady_s * (inputs.overhead_share or 0.0) + sum(planned)
    work_s = steady_s - stall_s
    extra = max(0.0, work_s / interval * reload_s - stall_s) if interval > 0 else math.inf
    loss_rate = per_s * (interval / 2 + restart_each)
    inf = math.inf
    if not (math.isfinite(steady_s) and math.isfinite(extra)) or loss_rate >= 1:
        return Goodput(
            steady_s,
            overhead,
            extra,
            inf,
            inf,
            inf,
            rate,
            interval,
            optimal,
            restart_each,
            source,
            *planned,
        )
    total = (steady_s + overhead + extra) / (1 - loss_rate)
    failures = per_s * total
    return Goodput(
        steady_s=steady_s,
        overhead_s=overhead,
        extra_saves_s=extra,
        lost_work_s=failures * interval / 2,
        restart_s=failures * restart_each,
        failures=failures,
        failures_per_gpu_hour=rate,
        interval_s=interval,
        optimal_interval_s=optimal,
        restart_each_s=restart_each,
        source=source,
        evaluation_s=planned[0],
        rampup_s=planned[1],
    )


def goodput_out(g: Goodput | None, gpus: int) -> GoodputOut | None:
    """Hours and minutes of a run's goodput, None for serving."""
    if g is None:
        return None
    hour = SECONDS_PER_HOUR
    return GoodputOut(
        steady_h=g.steady_s / hour,
        overhead_h=g.overhead_s / hour,
        evaluation_h=g.evaluation_s / hour,
        rampup_h=g.rampup_s / hour,
        extra_saves_h=g.extra_saves_s / hour,
        lost_work_h=g.lost_work_s / hour,
        restart_h=g.restart_s / hour,
        total_h=g.total_s / hour,
        goodput=g.fraction,
        failures=g.failures,
        failures_per_gpu_hour=g.failures_per_gpu_hour,
        checkpoint_interval_min=g.interval_s / 60,
        optimal_interval_min=(
            g.optimal_interval_s / 60 if math.isfinite(g.optimal_interval_s) else None
        ),
        restart_each_min=g.restart_each_s / 60,
        source=g.source,
        gpu_hours_steady=g.steady_s / hour * gpus,
        gpu_hours=g.total_s / hour * gpus,
    )
