"""Pipeline stages: which layers each rank holds, and how many micro-batches its schedule keeps
in flight on it.

The model is cut into virtual stages of consecutive layers. 1F1B: one per rank. Interleaved
1F1B (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", §2.2.2): PP·VP of them, virtual stage c·PP + r on rank r. DualPipe
(DeepSeek-V3 report §3.2.1): PP stages fed from both ends, rank r holding stages r and
PP − 1 − r. The input embedding sits in the first virtual stage, the output layer and the loss
in the last.

Layers are split evenly unless the user says otherwise: `first_stage_layers` /
`last_stage_layers` (Megatron-LM's `--decoder-first-pipeline-num-layers` /
`--decoder-last-pipeline-num-layers`; Llama 3 §3.3.2 "we reduce one Transformer layer each from
the first and the last stages") or a full `layers_per_stage` list. A rank's layers are spread
over its chunks; on the first rank the chunk next to the embedding is the one trimmed, on the
last rank the chunk next to the loss — so Llama 3's 126 layers on PP16 × VP8 leave "the first
model chunk on the first stage [with] only the embedding, and the last model chunk on the last
stage [with] only output projection and loss calculation" (§3.3.2).

In flight: Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py). 1F1B's
rank r runs PP − r − 1 warm-up forwards and one more before its first backward: PP − r micro-
batches at most. The interleaved schedule warms up with (PP − r − 1)·2 + (VP − 1)·PP chunk
forwards (`get_pp_rank_microbatches`, micro-batch group = PP), then alternates one forward
and one backward; forwards walk the chunks 0 → VP−1 and backwards VP−1 → 0 in groups of PP
micro-batches, so which chunks hold them is found by running that order (`in_flight`).
DualPipe keeps PP + 1 micro-batches of activations per rank (DeepSeek-V3 Table 2), half on
each of its two stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


class SplitError(ValueError):
    """A layer split that cannot be built on this pipeline."""


@dataclass(frozen=True)
class StageSplit:
    """Transformer layers per virtual stage, in model order, and which ranks hold which."""

    virtual: tuple[int, ...]  # layers of each virtual stage, model order
    ranks: tuple[tuple[int, ...], ...]  # per rank: the virtual stages it holds (chunk order)

    @property
    def pp(self) -> int:
        return len(self.ranks)

    def chunk_layers(self, rank: int) -> tuple[int, ...]:
        return tuple(self.virtual[v] for v in self.ranks[rank])

    def layers(self, rank: int) -> int:
        return sum(self.chunk_layers(rank))

    def first_layer(self, v: int) -> int:
        """Index of the first transformer layer of virtual stage `v`."""
        return sum(self.virtual[:v])

    def holds_embedding(self, rank: int) -> bool:
        return 0 in self.ranks[rank]

    def holds_head(self, rank: int) -> bool:
        return len(self.virtual) - 1 in self.ranks[rank]


def _even(total: int, parts: int) -> list[int]:
    """`total` over `parts`, the remainder on the earliest parts (a layer more each)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def rank_layers(
    layers: int,
    pp: int,
    *,
    first: int | None = None,
    last: int | None = None,
    per_stage: tuple[int, ...] | None = None,
) -> tuple[int, ...]:
    """Transformer layers per pipeline rank. Raises SplitError for a split that cannot be."""
    if per_stage is not None:
        if len(per_stage) != pp:
            raise SplitError(
                f"layers_per_stage lists {len(per_stage)} stages; the layout has PP {pp}"
            )
        if sum(per_stage) != layers:
            raise SplitError(
                f"layers_per_stage adds up to {sum(per_stage)}, not the {layers} layers"
            )
        return per_stage
    if pp == 1 or (first is None and last is None):
        return tuple(_even(layers, pp))
    head = first if first is not None else None
    tail = last if last is not None else None
    middle_ranks = pp - (head is not None) - (tail is not None)
    fixed = (head or 0) + (tail or 0)
    rest = layers - fixed
    if rest < 0 or (middle_ranks == 0 and rest != 0):
        raise SplitError(
            f"first/last stage layers ({head or 0} + {tail or 0}) do not leave the {layers} "
            f"layers a whole split over PP {pp}"
        )
    middle = _even(rest, middle_ranks) if middle_ranks else []
    out = ([head] if head is not None else []) + middle + ([tail] if tail is not None else [])
    return tuple(out)


def _spread(n: int, vp: int, trim_front: bool) -> list[int]:
    """`n` layers over `vp` chunks; the missing ones are taken from the front (the chunk next to
    the embedding) or the back (next to the loss)."""
    base, extra = divmod(n, vp)
    if trim_front:
        return [base + (1 if i >= vp - extra else 0) for i in range(vp)]
    return [base + (1 if i < extra else 0) for i in range(vp)]


@lru_cache(maxsize=1024)
def split_stages(
    layers: int,
    pp: int,
    vp: int = 1,
    schedule: str = "1f1b",
    *,
    first: int | None = None,
    last: int | None = None,
    per_stage: tuple[int, ...] | None = None,
) -> StageSplit:
    """The virtual stages of a pipeline of `pp` ranks with `vp` chunks each."""
    per_rank = rank_layers(layers, pp, first=first, last=last, per_stage=per_stage)
    if schedule == "dualpipe":
        # Stage s of the model sits on ranks s and PP − 1 − s (both directions).
        pairs: tuple[tuple[int, ...], ...] = tuple(
            (r, pp - 1 - r) if pp > 1 else (r,) for r in range(pp)
        )
        return StageSplit(per_rank, pairs)
    vp = max(1, vp)
    chunks = [
        _spread(n, vp, trim_front=(r == 0 and first is not None)) for r, n in enumerate(per_rank)
    ]
    virtual = tuple(chunks[v % pp][v // pp] for v in range(pp * vp))
    ranks = tuple(tuple(c * pp + r for c in range(vp)) for r in range(pp))
    return StageSplit(virtual, ranks)


def _pareto(states: list[tuple[float, ...]]) -> tuple[tuple[float, ...], ...]:
    """The states no other state holds at least as much of in every chunk."""
    unique = sorted(set(states), reverse=True)
    keep: list[tuple[float, ...]] = []
    for s in unique:
        if not any(all(k >= x for k, x in zip(kept, s, strict=True)) for kept in keep):
            keep.append(s)
    return tuple(keep)


def _interleaved(pp: int, vp: int, micro_batches: int, rank: int) -> tuple[tuple[float, ...], ...]:
    total = micro_batches * vp
    warmup = min(total, (pp - rank - 1) * 2 + (vp - 1) * pp)
    live = [0.0] * vp
    states: list[tuple[float, ...]] = []
    for k in range(warmup):
        live[(k // pp) % vp] += 1
    if warmup == total:
        states.append(tuple(live))
    for j in range(total - warmup):
        live[((warmup + j) // pp) % vp] += 1
        states.append(tuple(live))
        live[vp - 1 - (j // pp) % vp] -= 1
    return _pareto(states)


@lru_cache(maxsize=4096)
def in_flight(
    schedule: str, pp: int, vp: int, micro_batches: int, rank: int
) -> tuple[tuple[float, ...], ...]:
    """Micro-batches whose activations rank `rank` holds at once, per chunk: the candidate
    peaks (one tuple per state that no other state dominates)."""
    m = max(1, micro_batches)
    if schedule == "dualpipe" and pp > 1:
        return (((pp + 1) / 2, (pp + 1) / 2),)
    if vp <= 1 or pp <= 1:
        return ((float(min(pp - rank, m)),),)
    # Past one full period of PP·VP chunk-steps after warm-up the live set repeats, so a
    # longer run adds no new state.
    warmup = (pp - rank - 1) * 2 + (vp - 1) * pp
    enough = -(-(warmup + pp * vp) // vp)
    return _interleaved(pp, vp, min(m, enough), rank)
