"""The parameters each pipeline rank holds: a layer's, the multi-token prediction modules',
the output layer's, and each rank's share (the embedding on the first stage, the head on the
last, uneven splits as given). Counts of parameters, before TP/EP division and sharding."""

from __future__ import annotations

from functools import lru_cache

from gpusolve.estimate.memory import StageParams
from gpusolve.estimate.pipeline import StageSplit
from gpusolve.estimate.shapes import Arch


def layer_params(arch: Arch) -> tuple[float, float, float]:
    """Parameters of (a dense layer, an MoE layer outside its routed experts, an MoE layer's
    routed experts), scaled so that all layers add up to the model's body."""
    attn = arch.attention_block_params + 2 * arch.hidden
    matrices = 3 if arch.gated_ffn else 2
    dense_layer = attn + matrices * arch.hidden * arch.ffn
    moe_dense = attn + arch.shared_experts * matrices * arch.hidden * arch.expert_width
    moe_dense += arch.hidden * arch.experts  # router
    moe_layers = arch.moe_layers
    dense_layers = arch.layers - moe_layers
    counted = dense_layers * dense_layer + moe_layers * moe_dense
    body = arch.dense_params - arch.embedding_params
    scale = body / counted if counted > 0 else 0.0
    expert = arch.expert_params / moe_layers if moe_layers else 0.0
    return dense_layer * scale, moe_dense * scale, expert


# Per multi-token prediction module, the RMSNorms of the hidden state and of the next token's
# embedding (DeepSeek-V3 §2.2, eq. 21) and the final norm before the shared output head.
MTP_NORMS = 3


def mtp_params(arch: Arch) -> tuple[float, float]:
    """(parameters outside routed experts, routed-expert parameters) of one multi-token
    prediction module (DeepSeek-V3 §2.2): a transformer block shaped like the model's deepest
    layer (an MoE block in an MoE model), the projection M_k of 2h x h over the concatenated
    normalised hidden state and next-token embedding, and its norms. The embedding and the
    output head are the main model's: shared, no parameters of their own."""
    dense_layer, moe_dense, moe_expert = layer_params(arch)
    h = float(arch.hidden)
    extra = 2.0 * h * h + MTP_NORMS * h
    if arch.moe_layers:
        return moe_dense + extra, moe_expert
    return dense_layer + extra, 0.0


def mtp_active_params(arch: Arch) -> float:
    """Parameters of one MTP module a token passes through (MoE: its routed experts only)."""
    dense, expert = mtp_params(arch)
    return dense + expert * arch.active_experts / max(1, arch.experts)


def head_params(arch: Arch, pp: int) -> float:
    """The output layer (and final norm) on the last stage. With tied embeddings and a
    pipeline the last stage keeps its own copy of the embedding (Megatron-LM's shared word
    embeddings, gradients all-reduced between the first and last stage)."""
    untied_head = arch.embedding_params - arch.input_embedding_params
    if pp > 1 and untied_head < 0.5 * arch.vocab * arch.hidden:
        return untied_head + arch.input_embedding_params
    return untied_head


def chunk_mix(arch: Arch, split: StageSplit, v: int) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers) of virtual stage `v`: an MoE model's first
    `dense_layers` layers keep a dense MLP."""
    first_moe = arch.layers - arch.moe_layers
    start, n = split.first_layer(v), split.virtual[v]
    dense_here = max(0, min(start + n, first_moe) - start)
    return dense_here, n - dense_here


@lru_cache(maxsize=1024)
def stage_params(arch: Arch, split: StageSplit, mtp_depth: int = 0) -> tuple[StageParams, ...]:
    """What each rank holds: its layers, the input embedding on the first virtual stage, the
    output layer on the last, with the `mtp_depth` multi-token prediction modules beside it
    (DeepSeek-V3 §3.2.1 keeps the output head and the deepest layers on one rank)."""
    dense_layer, moe_dense, moe_expert = layer_params(arch)
    mtp_dense, mtp_expert = mtp_params(arch) if mtp_depth else (0.0, 0.0)
    out = []
    for rank, virtual in enumerate(split.ranks):
        dense = expert = 0.0
        for v in virtual:
            d, m = chunk_mix(arch, split, v)
            dense += d * dense_layer + m * moe_dense
            expert += m * moe_expert
        if split.holds_embedding(rank):
            dense += arch.input_embedding_params
        if split.holds_head(rank):
            dense += head_params(arch, split.pp) + mtp_depth * mtp_dense
            expert += mtp_depth * mtp_expert
        out.append(StageParams(dense, expert, split.layers(rank)))
    return tuple(out)
