"""A measured run's throughput, bounded below.

A measured run calibrates every card's estimate (`estimate/calibration.py`): an MFU of
1e-300, given or implied by `tokens_per_s` / `samples_per_s`, made every layout take
10^300 times longer, and the times reached CP-SAT beyond its integers while explaining
the infeasibility (exit 70). Such a figure is a slip (percent read as a fraction twice,
tokens per day given as per second), not a measurement: it is refused where it is written.
"""

from __future__ import annotations

from gpusolve.errors import Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.requirements import InferenceWorkload, Requirements

# The lowest model FLOPs utilisation a measured run may report: 0.1%. Healthy training runs
# 30-60% (H12's 30% floor); a run misconfigured by a factor of a hundred still does over
# 0.1%. Below that the run did essentially no model work, and as a calibration it would
# stretch every estimate by over a thousand.
MIN_MEASURED_MFU = 0.001


def measured_problems(reqs: Requirements, doc: Document, catalog: Catalog) -> list[Problem]:
    """The measured runs whose MFU (given, or implied by their rate) is below the floor."""
    if all(w.measured_run is None for w in reqs.workloads):
        return []  # without importing the step-time model the check needs
    from gpusolve.estimate import UnknownPreset, resolve_arch
    from gpusolve.estimate.calibration import measured_mfu_of, measured_workload
    from gpusolve.estimate.trainshape import model_flops_per_token

    problems = []
    for i, w in enumerate(reqs.workloads):
        m = w.measured_run
        if m is None or isinstance(w, InferenceWorkload) or m.card not in catalog.cards:
            continue
        try:
            arch = resolve_arch(w.model)
        except (UnknownPreset, ValueError):
            continue  # reported as the model's own problem
        per_token = model_flops_per_token(arch, measured_workload(w))
        mfu = measured_mfu_of(w, catalog.cards[m.card], per_token)
        if mfu is None or mfu >= MIN_MEASURED_MFU:
            continue
        field = "mfu" if m.mfu is not None else "tokens_per_s"
        if m.mfu is None and m.tokens_per_s is None:
            field = "samples_per_s"
        loc = doc.locate(("workloads", i, "measured", field)) or (None, None)
        given = "" if field == "mfu" else f" (an MFU of {mfu:.2g} on {m.gpus} x {m.card})"
        problems.append(
            Problem(
                doc.name,
                loc[0],
                loc[1],
                f"measured.{field} {getattr(m, field):.3g} is too low to be a measurement{given}: "
                f"below {MIN_MEASURED_MFU:.1%} MFU a run does essentially no model work",
                "give MFU as a fraction (0.4 for 40%) and rates per second for the whole run",
            )
        )
    return problems
