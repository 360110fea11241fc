"""Work too small to buy hardware for, or too large for the horizon.

Too small: a 7B fine-tune of 1,000 tokens is a fraction of a second of GPU work, yet the candidates
stage sized servers for it as if it were a real run (four HGX H20 servers, 5.9 M CNY:
per-run overheads such as checkpoint stalls dominate a run that short). Buying servers
for minutes of work is never the answer, so such a workload keeps only its rentals, and
every rental that fits the work (memory, deadline) stays: a run that short saves one
checkpoint, at its end, and that save can be a large share of seconds of training, so
H16's limit on the share of time synchronous saves stall (a long run's throughput) does
not apply to it. The save's time is still charged in the run's hours: a smaller job
must never find fewer rentals than a larger one (a 7B fine-tune of 1e6 tokens rents what
the same job of 3e9 tokens does).

Too large: 10^15 tokens run 10^6 times on one RTX 4090 server takes 22 million hours a
run; the plan bought it anyway because only a deadline bounded time. An option whose runs
do not all fit in the hours its schedule has over the horizon cannot serve the workload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpusolve.candidates.records import Candidates, Rejection
from gpusolve.models.catalog import Catalog
from gpusolve.models.money import slot_hours_per_month
from gpusolve.models.params import Params
from gpusolve.models.policy import Penalty, RuleHit, WorkloadPolicy
from gpusolve.models.requirements import InferenceWorkload, Requirements, Workload

# One GPU-hour over the whole horizon: "a single GPU finishes it in minutes" with a wide
# margin either side of any real purchase decision (the smallest purchase, one 8-GPU
# server, is ~60,000 GPU-hours of capacity over three years).
TINY_GPU_HOURS = 1.0
# Training FLOPs per parameter per token: forward 2 + backward 4 (Kaplan et al. 2020).
FLOPS_PER_PARAM_TOKEN = 6
# A deliberately good utilisation, so only work that is small even then is flagged.
MFU = 0.5


def gpu_hours(workload: Workload, catalog: Catalog) -> float | None:
    """Hours the fastest catalogue card needs for all runs; None for serving or unknown."""
    if isinstance(workload, InferenceWorkload) or not catalog.cards:
        return None
    from gpusolve.estimate import UnknownPreset, resolve_arch

    try:
        params = resolve_arch(workload.model).active_params
    except (UnknownPreset, ValueError):
        return None
    peak = max((c.tflops_at("bf16") or c.tflops.fp32) for c in catalog.cards.values())
    flops = FLOPS_PER_PARAM_TOKEN * params * workload.tokens_per_run * workload.runs
    return flops / (peak * 1e12 * MFU) / 3600


def small_jobs(reqs: Requirements, catalog: Catalog) -> dict[str, str]:
    """Workload name -> why it is too small to buy servers for."""
    found: dict[str, str] = {}
    for w in reqs.workloads:
        hours = gpu_hours(w, catalog)
        if hours is not None and hours < TINY_GPU_HOURS and not isinstance(w, InferenceWorkload):
            found[w.name] = (
                f"{w.name} is about {hours * 60:.2g} GPU-minutes of work in all "
                f"({w.tokens_per_run:g} tokens x {w.runs:g} runs): too small to buy servers for; "
                "rent by the hour or use any GPU you have"
            )
    return found


# The stall share a short run may have: all of it (a share cannot exceed 1).
SHORT_RUN_STALL_MAX_FRACTION = 1.0
SHORT_RUN = "small job (minutes of work: one checkpoint, at the end of the run)"


@dataclass(frozen=True)
class ShortRunPolicy:
    """A small workload's policy: its rules as they are, with no limit on the share of the
    run a checkpoint save stalls (see the module's docstring)."""

    inner: WorkloadPolicy

    @property
    def params(self) -> Params:
        return replace(
            self.inner.params, checkpoint_stall_max_fraction=SHORT_RUN_STALL_MAX_FRACTION
        )

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return self.inner.failed(kind, subject, context)

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return self.inner.penalty(kind, subject, context)

    def param_origin(self, name: str) -> str | None:
        if name == "checkpoint_stall_max_fraction":
            return SHORT_RUN
        return self.inner.param_origin(name)


def short_run_policies(
    policies: dict[str, WorkloadPolicy], small: dict[str, str]
) -> dict[str, WorkloadPolicy]:
    """The policies with the small workloads' ones wrapped in `ShortRunPolicy`."""
    return {name: ShortRunPolicy(p) if name in small else p for name, p in policies.items()}


def rent_only(cand: Candidates, small: dict[str, str]) -> Candidates:
    """The candidates without bought-server options for the small workloads."""
    owned = tuple(o for o in cand.instance.owned if o.workload not in small)
    return replace(cand, instance=replace(cand.instance, owned=owned))


def beyond_horizon(cand: Candidates, reqs: Requirements) -> Candidates:
    """The candidates without options whose runs take longer than the horizon holds;
    each dropped option is recorded as a rejection saying by how much."""
    by_name = {w.name: w for w in reqs.workloads}
    drop: set[str] = set()
    rejections = {w: list(r) for w, r in cand.rejections.items()}
    for key, meta in cand.meta.items():
        w = by_name.get(meta.workload)
        per_run_s = meta.estimate.time_to_train_s
        if w is None or per_run_s is None:
            continue
        needed_h = per_run_s / 3600 * w.runs * meta.share  # a split's part runs its share
        available_h = slot_hours_per_month(w.schedule) * reqs.horizon_months
        if needed_h > available_h:
            drop.add(key)
            what = meta.server or meta.cloud_offer or meta.card
            rejections.setdefault(w.name, []).append(
                Rejection(
                    w.name,
                    what,
                    [
                        f"{w.runs * meta.share:g} run(s) of {per_run_s / 3600:,.3g} h need "
                        f"{needed_h:,.3g} h; "
                        f"the {reqs.horizon_months}-month horizon holds {available_h:,.0f} h"
                    ],
                )
            )
    if not drop:
        return cand
    instance = replace(
        cand.instance,
        owned=tuple(o for o in cand.instance.owned if o.key not in drop),
        cloud=tuple(c for c in cand.instance.cloud if c.key not in drop),
    )
    return replace(cand, instance=instance, rejections=rejections)
