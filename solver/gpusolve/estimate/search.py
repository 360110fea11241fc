"""Search parallel layouts for one workload on one hardware type: `search_layouts`.

Training: for each GPU count (whole nodes 1, 2, 3, 4, 6, 8, 12, 16, ... — powers of two
and 1.5× powers of two — up to `max_nodes`, one node when the hardware has no inter-node
fabric; with `whole_nodes=False` also 1, 2, 4 ... GPUs of one node) find the fastest
feasible layout. Model-parallel splits tp × cp × pp are tried from small to large (TP inside
a node, TP ∈ {1, 2, 4, 8} dividing the heads; CP ∈ {1, 2, 4, 8} for sequences of 16k tokens
and more; DP must split a given global batch exactly); for each, every recomputation level
gets the *least* sharding, then the least expert parallelism (inside or across nodes), that
fits (more of either only adds communication), then the largest micro-batch that fits; with
pipeline stages the interleaved schedule (2 and 4 virtual stages) is tried too. Dominance
prunes the rest: the climb ends at a split where the plainest layout (no recomputation, DDP
or ZeRO-1) is feasible (larger splits only add communication), skips splits whose lower
bound on time (their GEMM FLOPs at the card's achievable rate and the least bubble) cannot
beat the best found, and stops after six feasible splits in a row without improvement.

GPU counts: the search stops at the first count whose best layout meets the deadline
(`workload.deadline_hours`, one run) — without a deadline that is the first feasible
count, or a count no faster than the one before; between the last count that misses
the deadline and the first that meets it, up to eight evenly spaced counts are bisected, so
a 21-day run lands near the node count it needs rather than a 1.5× step above it. When even
`max_nodes` misses the deadline only powers of two are sampled. Layouts that miss the
deadline are returned with `meets_deadline=False` so the caller can explain "deadline too
short", with a sentence in `rejections`. With `every_size` (the planner's candidates) the
search goes on past the first count that meets the deadline, through each larger count on
the grid while it is faster; the bisected count is kept as well as the grid count above it.

Inference: for TP = 1, 2, 4, 8 (then PP across nodes if one node is too small) a replica
decodes as many sequences as memory (the KV cache at the mean live context) and the TPOT
target allow. A stated `concurrency` is held exactly: the replicas are filled in turn, the
last one partly (64 on replicas of at most 10 is 6 × 10 + 4), and the fewest replicas whose
batches, each timed at the batch it runs, deliver `target_tokens_per_s` are bisected; without
a concurrency, replicas are added until the target is met, at the smallest per-replica batch
that still meets it (lower latency). No more replicas are tried than the allowed nodes hold,
so a demand no layout meets ends with a reason, however large it grows. A larger TP is kept
only if it needs fewer GPUs in total.

For every GPU count with no feasible layout the closest attempt's reasons are kept in
`rejections`, so "why not this card" always has an answer with numbers.
"""

from __future__ import annotations

from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.searchcore import SearchResult as SearchResult
from gpusolve.estimate.shapes import resolve_arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, Workload


def search_layouts(
    workload: Workload,
    hw: Hardware,
    params: Params,
    *,
    max_nodes: int,
    whole_nodes: bool = True,
    every_size: bool = False,
) -> SearchResult:
    """Feasible layouts of `workload` on `hw` using 1..max_nodes nodes (capped by
    `params.max_nodes`, and by one node when `params.allow_multi_node` is false).
    `whole_nodes=False` also tries fractions of one node (1, 2, 4 ... GPUs): the smallest
    configuration, as `gpusolve estimate` shows it.

    `every_size=True` does not stop at the first size that meets the deadline: training
    goes on through the larger node counts while each is faster than the one before (a
    rental can cost less on more instances for fewer hours, and a larger owned layout has
    more headroom or throughput), and inference keeps every replica shape that fits, not
    only those that need fewer GPUs. The planner's candidates use it, so "optimal" covers
    every size the search can tell apart, not only the smallest one."""
    limit = min(max_nodes, params.max_nodes)
    if not params.allow_multi_node:
        limit = min(limit, 1)
    if limit < 1:
        return SearchResult([], ["no nodes allowed (max_nodes < 1)"])
    # The searches import the whole estimate: not on the path of a plan whose searches
    # were kept between runs (`candidates/layout_cache.py`).
    from gpusolve.estimate.searchcore import SearchScope
    from gpusolve.estimate.searchserve import search_inference
    from gpusolve.estimate.searchtrain import search_training

    arch = resolve_arch(workload.model)
    scope = SearchScope(arch, hw, params, limit, whole_nodes, every_size)
    if isinstance(workload, InferenceWorkload):
        return search_inference(workload, scope)
    return search_training(workload, scope)
