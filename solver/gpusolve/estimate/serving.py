"""A serving layout as engines run it: continuous batching, prefill and decode as kernels.

Notation, per replica of t (TP) × p (PP) GPUs:
  B  sequences decoded together (the running batch)     P, O  mean prompt and output tokens
  C  mean live context a sequence holds in the KV cache = P + O/2 (it grows from P to P + O)

One engine step runs, per pipeline stage, on the B/p sequences of its micro-batch, kernel
after kernel (nothing overlaps across kernels unless a mechanism named here overlaps it):
  GEMMs ........ max(weights/(t·p) at the streaming bandwidth, their FLOPs at the decode-shaped
                 GEMM rate for M rows): weight loads and MMAs overlap inside one GEMM kernel
                 (a pipelined CUTLASS/cuBLAS mainloop), `decode_gemm.py`
  attention .... the KV of B/p sequences at C, read by the paged decode-attention kernel, plus
                 the attention FLOPs of the prompt tokens prefilled in this step
  all-reduces .. two per layer over TP, messages of M rows (not overlapped: no engine's default
                 decode path overlaps them)
  gaps ......... a small launch gap per kernel (CUDA-graph replay)
  TPOT = p · step (+ the hops between stages): stages add latency, never one sequence's speed.
Prefill: engines that mix prefill chunks into decode steps (vLLM's chunked prefill, on by
default in the V1 engine; TensorRT-LLM's in-flight batching runs context and generation
requests in one forward) add P/O prompt tokens per sequence to each step's M rows, so those
tokens share the step's weight stream (Agrawal et al. 2024, Sarathi-Serve, OSDI'24: decodes
"piggyback" on prefill chunks). SGLang does not mix by default (`enable_mixed_chunk` off) and
runs prefill batches of their own between decode steps.
  tokens/s = B / TPOT            TTFT = one prompt's prefill through each stage in turn.
The batch is bounded by memory (weights, the engine's profiled activations, CUDA graphs, the
KV cache at what the engine's scheduler reserves per request, `engines.py`) and by the latency
targets (`tpot_ms`, `ttft_ms`), not by a constant. A card whose single-sequence TPOT already
misses `tpot_ms` is "unattainable on this card".

MoE layers: the routed experts are timed apart from the rest of the step, at each expert's
share of the tokens, with the router, permute and expanded-row costs and, under attention
data-parallel, the dispatch and combine instead of the all-reduces (`moeserve.py`).

Decode KV reads run through a paged-attention kernel, 20-26% slower than a contiguous one
(Kwon et al. 2023, vLLM, §7.3: "20–26% higher attention kernel latency" than
FasterTransformer), hence `PAGED_ATTENTION_SLOWDOWN`. Engines replay decode as CUDA graphs,
so each kernel costs its time plus a small gap (`GRAPH_KERNEL_GAP_S`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace

from gpusolve.estimate.activations import (
    inference_activations_bytes,
    kv_bytes_per_element,
    kv_cache_bytes,
)
from gpusolve.estimate.engines import (
    CUDA_GRAPH_BYTES,
    Engine,
    engine_named,
    reserved_context,
)
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import (
    Layout,
    overhead_bytes,
)
from gpusolve.estimate.memory import MemoryBreakdown, weights_bytes
from gpusolve.estimate.moeserve import (
    split_of,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload

# Without a stated split, a request of `context_len` tokens is split as ShareGPT's are: 202
# prompt and 179 output tokens on average (vLLM v0.6.0 performance blog, 2024-09-05).
SHAREGPT_PROMPT_SHARE = 202 / (202 + 179)
# Prompt tokens per prefill step: vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size
# and TensorRT-LLM's max_num_tokens all default to 8192 on large cards (engines.py).
CHUNK_TOKENS = 8192
MAX_BATCH_SEARCH = 65536  # search bound only; memory and latency set the real limit


def request_shape(workload: InferenceWorkload) -> tuple[float, float, str | None]:
    """(mean prompt P, mean output O, a note when a default was used)."""
    p, o, ctx = workload.prompt_tokens, workload.output_tokens, workload.context_len
    if p is not None and o is not None:
        return float(p), float(o), None
    total = float(ctx or workload.seq_len)
    if p is not None:
        return float(p), max(1.0, total - p), None
    if o is not None:
        return max(0.0, total - o), float(o), None
    prompt = total * SHAREGPT_PROMPT_SHARE
    return (
        prompt,
        total - prompt,
        f"prompt/output split of the {total:,.0f}-token context as ShareGPT's 202/179 "
        "(give prompt_tokens and output_tokens to size it exactly)",
    )


def mean_live_context(workload: InferenceWorkload) -> float:
    prompt, output, _ = request_shape(workload)
    return prompt + output / 2


def workload_engine(workload: InferenceWorkload) -> Engine:
    return engine_named(workload.engine)


def reserve_policy(workload: InferenceWorkload) -> str:
    """full | mean: the stated policy, else the engine's scheduler default."""
    return workload.reserve or workload_engine(workload).reserve


def reserved_tokens(workload: InferenceWorkload) -> float:
    """KV tokens one running request holds against the pool under the engine's scheduler."""
    prompt, output, _ = request_shape(workload)
    return reserved_context(reserve_policy(workload), prompt, output)


def _static_bytes(
    workload: InferenceWorkload, arch: Arch, layout: Layout, params: Params, card_bytes: float
) -> tuple[float, float, float]:
    """(weights, profiled activations, runtime overhead incl. CUDA graphs) per GPU."""
    mp = layout.tp * layout.pp
    engine = workload_engine(workload)
    tokens = engine.profiled_tokens(card_bytes)
    weights = split_weights_bytes(workload, arch, layout)
    activations = inference_activations_bytes(arch, context=tokens, tp=layout.tp, chunk=tokens)
    return weights, activations, overhead_bytes(params, mp) + CUDA_GRAPH_BYTES


def split_weights_bytes(workload: InferenceWorkload, arch: Arch, layout: Layout) -> float:
    """Weights on one GPU: the routed experts over the stage's ranks (TP slices or EP whole
    experts hold the same bytes), the rest over TP, or whole on every rank under attention
    data-parallel."""
    split = split_of(layout)
    stored = weights_bytes(arch, workload.precision, group_size=workload.quant_group_size)
    experts = stored * arch.expert_params / arch.params
    return (experts / split.ranks + (stored - experts) / split.attention_ranks) / layout.pp


def serving_memory(
    workload: InferenceWorkload,
    arch: Arch,
    layout: Layout,
    params: Params,
    batch: float | None = None,
    card_bytes: float = 80e9,
) -> MemoryBreakdown:
    """Memory per GPU of one replica holding `batch` sequences (default: micro_batch), each
    holding the KV the engine's scheduler reserves for it."""
    kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
    weights, activations, overhead = _static_bytes(workload, arch, layout, params, card_bytes)
    return MemoryBreakdown(
        weights_bytes=weights,
        gradients_bytes=0.0,
        optimizer_bytes=0.0,
        activations_bytes=activations,
        kv_cache_bytes=kv_cache_bytes(
            arch,
            context=reserved_tokens(workload),
            batch=(layout.micro_batch if batch is None else batch)
            * split_of(layout).sequence_share,
            kv_bytes=kv_b,
            tp=split_of(layout).attention_ranks,
            pp=layout.pp,
        ),
        overhead_bytes=overhead,
    )


def engine_usable_bytes(
    workload: InferenceWorkload, arch: Arch, layout: Layout, params: Params, card_bytes: float
) -> float:
    """What the engine lets its pools take on one GPU: vLLM and SGLang a share of the card
    (CUDA graphs come out of the rest), TensorRT-LLM weights, activations and overhead plus a
    share of what they leave free."""
    engine = workload_engine(workload)
    share = workload.kv_memory_fraction or engine.fraction(layout.tp)
    weights, activations, overhead = _static_bytes(workload, arch, layout, params, card_bytes)
    if engine.fraction_of == "free":
        static = weights + activations + overhead
        return static + share * max(0.0, card_bytes - static)
    return share * card_bytes + CUDA_GRAPH_BYTES


def serving_params(
    workload: InferenceWorkload, arch: Arch, layout: Layout, params: Params, card_bytes: float
) -> Params:
    """`params` with the larger of the plan's headroom (H29) and what the engine leaves
    outside its pools on this layout: a paged KV pool wastes next to nothing inside itself,
    so the engine's share is the floor, and a rule or user asking for more keeps more."""
    usable = engine_usable_bytes(workload, arch, layout, params, card_bytes)
    engine_headroom = min(0.9, max(0.0, 1.0 - usable / card_bytes))
    return replace(params, headroom=max(params.headroom, engine_headroom))


def replica_nodes(layout: Layout, gpus_per_node: int) -> int:
    """Nodes needed to hold `replicas` copies of tp × pp GPUs, packed."""
    mp = layout.tp * layout.pp
    if mp > gpus_per_node:
        return layout.replicas * math.ceil(mp / gpus_per_node)
    return math.ceil(layout.replicas / (gpus_per_node // mp))


def serving_layout(
    tp: int,
    pp: int,
    gpus_per_node: int,
    *,
    micro_batch: int = 1,
    replicas: int = 1,
    sequences: int | None = None,
    ep: int = 1,
    attention_dp: bool = False,
) -> Layout:
    """`replicas` copies of tp × pp GPUs, each decoding `micro_batch` sequences (`sequences`
    over all of them when the last is partly filled), on as few nodes as hold them; an MoE
    replica may hold whole experts on each of a stage's tp ranks (`ep` = tp) and attend
    data-parallel over them (`attention_dp`, moeserve.py)."""
    if sequences is not None and sequences >= replicas * micro_batch:
        sequences = None
    lay = Layout(
        nodes=1,
        tp=tp,
        pp=pp,
        dp=1,
        micro_batch=micro_batch,
        replicas=replicas,
        sequences=sequences,
        ep=ep,
        attention_dp=attention_dp,
    )
    return replace(lay, nodes=replica_nodes(lay, gpus_per_node))


def fill_replicas(sequences: int, batch_max: int) -> tuple[int, int]:
    """(replicas, sequences each full one runs) holding exactly `sequences`, filled in turn:
    as few replicas as `batch_max` allows, each full one at ceil(sequences / replicas), the
    last one what is left (64 on replicas of at most 10: 6 × 10 + 4)."""
    replicas = math.ceil(sequences / batch_max)
    batch = math.ceil(sequences / replicas)
    return math.ceil(sequences / batch), batch


def pool_tokens_per_s(
    groups: Iterable[tuple[int, int]], tokens_per_s: Callable[[int], float]
) -> float:
    """Generated tokens/s of replicas in (count, batch) groups, each replica at the batch it
    runs (`tokens_per_s(batch)` for one replica); idle replicas add nothing."""
    return sum(n * tokens_per_s(b) for n, b in groups if b > 0)


def amount(x: float) -> str:
    """A demand figure for a sentence: grouped digits, or 3 significant ones past a billion
    (a demand grown without bound must not print 300 digits)."""
    return f"{x:,.0f}" if abs(x) < 1e9 else f"{x:.3g}"


def describe_fill(groups: Iterable[tuple[int, int]]) -> str:
    """'6 replicas × 10 sequences + 1 replica × 4 sequences'."""
    return " + ".join(
        f"{n} replica{'s' if n != 1 else ''} × {b} sequence{'s' if b != 1 else ''}"
        for n, b in groups
    )


# --------------------------------------------------------------------------- timing


def max_batch_by_memory(
    workload: InferenceWorkload, arch: Arch, layout: Layout, usable: float, params: Params
) -> int:
    card_bytes = usable / (1.0 - params.headroom) if params.headroom < 1 else usable
    empty = serving_memory(workload, arch, layout, params, 0, card_bytes).total_bytes
    per_seq = serving_memory(workload, arch, layout, params, 1, card_bytes).total_bytes - empty
    if empty > usable:
        return 0
    if per_seq <= 0:
        return MAX_BATCH_SEARCH
    return max(0, min(MAX_BATCH_SEARCH, int((usable - empty) // per_seq)))


def max_batch_by_engine(workload: InferenceWorkload, hw: Hardware) -> int:
    """The scheduler's own cap on running requests per replica (engines.py)."""
    card = hw.card
    return workload_engine(workload).batch_cap(card.reported_memory_bytes, card.id)
