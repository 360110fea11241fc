"""Resolve a workload's `ModelShape` into a full architecture (`Arch`).

Three ways in, in order of trust:
  * a named preset (shapes from published configs, `presets.py`), shape fields overriding it;
  * the architecture (layers and hidden at least; missing fields get stated defaults);
  * only `params_b`: the *coarse* path. A plausible dense shape is derived from the size
    (hidden ≈ 128 × layers, parameters ≈ 12 · layers · hidden², the aspect ratio of
    Llama 2 7B/13B and GPT-3; hidden rounded to 1024 so 128-wide heads split over any
    TP ≤ 8) and the result is flagged `coarse` so every figure built on it can say so.

When the user gives `params_b` it is the parameter count (it is what they know); the
shape is then used for activations and the KV cache only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from gpusolve.estimate.presets import Preset, find_preset, preset_names
from gpusolve.estimate.units import BILLION
from gpusolve.models.requirements import ModelShape

DEFAULT_HEAD_DIM = 128  # Llama, Mistral, Qwen2.5 and GPT-3 all use 128
DEFAULT_VOCAB = 32000  # Llama 2 / Mistral tokenizer
COARSE_ASPECT = 128  # hidden / layers of Llama 2 7B (4096/32), 13B (5120/40), GPT-3 (12288/96)


class UnknownPreset(ValueError):
    """A `model.preset` that is not in the shipped table."""


@dataclass(frozen=True)
class ParamCount:
    total: float
    active: float  # per token (MoE: only the routed experts)
    experts: float  # inside routed expert MLPs (0 for dense models)
    embeddings: float  # input embedding (+ LM head when untied, + learned positions)
    input_embeddings: float  # the lookup tables alone (token and position)


@dataclass(frozen=True)
class Arch:
    """A transformer, fully specified. Counts are plain numbers (parameters, not billions).

    MoE: `experts` routed experts of inner size `expert_ffn` per MoE layer, `active_experts`
    of them per token, plus `shared_experts` every token visits; the first `dense_layers`
    layers have a dense MLP of size `ffn`. Attention is grouped-query (`kv_heads` ≤ `heads`)
    or, with `kv_lora_rank` > 0, multi-head latent attention (DeepSeek-V2/V3 MLA).
    """

    name: str | None
    params: float
    active_params: float
    expert_params: float
    embedding_params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int
    active_experts: int
    gated_ffn: bool
    coarse: bool
    convention: str
    assumptions: tuple[str, ...] = ()
    expert_ffn: int = 0  # 0 = ffn
    shared_experts: int = 0
    dense_layers: int = 0
    kv_lora_rank: int = 0  # > 0: MLA
    q_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0  # 0 = head_dim
    input_embedding_params: float = 0.0  # the lookup table alone (no FLOPs)
    routing_node_limit: int = 0  # MoE: most nodes one token is sent to (0 = no limit)
    mtp_depth: int = 0  # multi-token prediction modules (trained, not in `params`)

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def params_b(self) -> float:
        return self.params / BILLION

    @property
    def dense_params(self) -> float:
        """Parameters outside the routed experts (all of them for a dense model)."""
        return self.params - self.expert_params

    @property
    def layer_params(self) -> float:
        """Parameters of one transformer block (all experts included), on average."""
        return (self.params - self.embedding_params) / self.layers

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_width(self) -> int:
        return self.expert_ffn or self.ffn

    @property
    def qk_head_dim(self) -> int:
        """Width of one head's query/key dot product (MLA: nope + rope parts)."""
        return self.head_dim + self.rope_head_dim if self.is_mla else self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def kv_elements_per_token_layer(self) -> int:
        """K and V elements one token leaves in one layer's cache: 2·kv_heads·head_dim, or
        MLA's compressed latent plus its RoPE key (kv_lora_rank + rope_head_dim)."""
        if self.is_mla:
            return self.kv_lora_rank + self.rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def attention_block_params(self) -> float:
        """Projection parameters of one attention block (`attention_params`)."""
        mla = (self.kv_lora_rank, self.q_lora_rank, self.rope_head_dim, self.v_head_dim)
        return attention_params(self.hidden, self.heads, self.kv_heads, self.head_dim, *mla)


def attention_params(
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    kv_lora_rank: int = 0,
    q_lora_rank: int = 0,
    rope_head_dim: int = 0,
    v_head_dim: int = 0,
) -> float:
    """Projection parameters of one attention block.

    GQA/MHA: Q and O are hidden × (heads·head_dim), K and V hidden × (kv_heads·head_dim).
    MLA (DeepSeek-V2 §2.1, V3 §2.1.1): queries through an optional rank-q_lora bottleneck to
    heads·(head_dim + rope_head_dim); keys and values from one rank-kv_lora latent plus a
    shared RoPE key (hidden × (kv_lora + rope)), expanded to heads·(head_dim + v_head_dim);
    O is heads·v_head_dim × hidden.
    """
    if kv_lora_rank <= 0:
        return float(hidden * head_dim * (2 * heads + 2 * kv_heads))
    dv = v_head_dim or head_dim
    q_width = heads * (head_dim + rope_head_dim)
    q = hidden * q_lora_rank + q_lora_rank * q_width if q_lora_rank else hidden * q_width
    kv = hidden * (kv_lora_rank + rope_head_dim) + kv_lora_rank * heads * (head_dim + dv)
    return float(q + kv + heads * dv * hidden)


def count_params(
    *,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    vocab: int,
    gated_ffn: bool,
    tied_embeddings: bool,
    experts: int = 1,
    active_experts: int = 1,
    learned_positions: int = 0,
    expert_ffn: int = 0,
    shared_experts: int = 0,
    dense_layers: int = 0,
    kv_lora_rank: int = 0,
    q_lora_rank: int = 0,
    rope_head_dim: int = 0,
    v_head_dim: int = 0,
) -> ParamCount:
    """Parameters of a decoder-only transformer from its shape.

    MLP: 2 (GeLU) or 3 (SwiGLU) matrices of hidden × ffn; an MoE layer has `experts` routed
    and `shared_experts` shared experts of hidden × expert_ffn each, and a router; the first
    `dense_layers` layers of an MoE keep a dense MLP of size ffn. Two norms per layer are
    counted; biases are not (they are < 0.1%).
    """
    mla = (kv_lora_rank, q_lora_rank, rope_head_dim, v_head_dim)
    attn = attention_params(hidden, heads, kv_heads, head_dim, *mla)
    matrices = 3 if gated_ffn else 2
    dense_mlp = matrices * hidden * ffn
    one_expert = matrices * hidden * (expert_ffn or ffn)
    norms = 2 * hidden
    input_embed = vocab * hidden + learned_positions * hidden
    embed = input_embed + (0 if tied_embeddings else vocab * hidden) + hidden
    if experts > 1:
        moe_layers = layers - dense_layers
        router = hidden * experts
        expert_total = float(moe_layers * one_expert * experts)
        shared = moe_layers * (one_expert * shared_experts + router)
        base = layers * (attn + norms) + dense_layers * dense_mlp + shared + embed
        total = base + expert_total
        active = base + moe_layers * one_expert * active_experts
    else:
        expert_total = 0.0
        total = active = layers * (attn + norms + dense_mlp) + embed
    return ParamCount(float(total), float(active), expert_total, float(embed), float(input_embed))


INT_FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn",
    "vocab",
    "experts",
    "active_experts",
    "head_dim",
    "expert_ffn",
    "shared_experts",
    "dense_layers",
    "kv_lora_rank",
    "q_lora_rank",
    "rope_head_dim",
    "v_head_dim",
    "routing_node_limit",
    "mtp_depth",
)


def _from_preset(p: Preset) -> dict[str, int]:
    out = {k: int(getattr(p, k)) for k in INT_FIELDS}
    return {k: v for k, v in out.items() if v or k in ("shared_experts", "dense_layers")}


def _round_to(value: float, step: int) -> int:
    return max(step, round(value / step) * step)


COARSE_HIDDEN_STEP = 1024  # so heads = hidden/128 is a multiple of 8 and any TP ≤ 8 divides it


def coarse_shape(params: float) -> tuple[int, int]:
    """(layers, hidden) of a dense model of `params` parameters: hidden ≈ 128·layers,
    params ≈ 12·layers·hidden² → hidden = (128·params/12)^(1/3), rounded to 1024."""
    hidden = _round_to((COARSE_ASPECT * params / 12.0) ** (1.0 / 3.0), COARSE_HIDDEN_STEP)
    layers = max(1, round(params / (12.0 * hidden * hidden)))
    return layers, hidden


@lru_cache(maxsize=512)
def resolve_arch(model: ModelShape) -> Arch:
    """The full architecture for a workload's model. Raises `UnknownPreset` (a ValueError)."""
    preset: Preset | None = None
    if model.preset is not None:
        preset = find_preset(model.preset)
        if preset is None:
            raise UnknownPreset(
                f"unknown model preset {model.preset!r}; known presets: {', '.join(preset_names())}"
            )
    base: dict[str, int] = _from_preset(preset) if preset else {}
    given: dict[str, int] = {
        k: int(getattr(model, k)) for k in INT_FIELDS if getattr(model, k) is not None
    }
    shape = {**base, **given}
    user_params = model.params_b * BILLION if model.params_b is not None else None
    if "layers" in shape and "hidden" in shape:
        return _architecture(model, preset, shape, user_params)
    assert user_params is not None  # ModelShape guarantees params_b, a preset or the shape
    return _coarse(model, user_params)


def _attention_shape(
    shape: dict[str, int], hidden: int, assumptions: list[str]
) -> tuple[int, int, int, int]:
    """(heads, kv_heads, head_dim, kv_lora_rank), noting what was assumed."""
    if "heads" in shape:
        heads = int(shape["heads"])
    else:
        heads = max(1, hidden // DEFAULT_HEAD_DIM)
        assumptions.append(f"heads = hidden/128 = {heads} (not given)")
    kv_lora = int(shape.get("kv_lora_rank", 0))
    kv_heads = int(shape.get("kv_heads", heads))
    if "kv_heads" not in shape and not kv_lora:
        assumptions.append("kv_heads = heads (no grouped-query attention assumed)")
    head_dim = int(shape.get("head_dim", 0)) or max(1, hidden // heads)
    return heads, kv_heads, head_dim, kv_lora


def _mlp_shape(
    model: ModelShape,
    preset: Preset | None,
    shape: dict[str, int],
    hidden: int,
    assumptions: list[str],
) -> tuple[int, bool]:
    """(ffn, gated), noting what was assumed."""
    if "ffn" in shape:
        if model.gated_ffn is not None:
            return int(shape["ffn"]), model.gated_ffn
        if preset is not None:
            return int(shape["ffn"]), preset.gated_ffn
        assumptions.append("gated (SwiGLU) feed-forward assumed, as in Llama/Qwen/Mistral")
        return int(shape["ffn"]), True
    ffn = 4 * hidden
    gated = bool(model.gated_ffn) if model.gated_ffn is not None else False
    assumptions.append(
        f"ffn = 4·hidden = {ffn}, {'SwiGLU' if gated else 'GeLU'} MLP (ffn not given)"
    )
    return ffn, gated


def _scaled(
    counted: float, user_params: float | None, assumptions: list[str]
) -> tuple[float, float]:
    """(parameters, scale of the shape's count): a given params_b wins, noted when it differs
    from the shape's own count by more than 10%."""
    if user_params is None:
        return counted, 1.0
    scale = user_params / counted
    if abs(scale - 1.0) > 0.10:
        assumptions.append(
            f"params_b {user_params / BILLION:.2f} differs from the shape's count "
            f"{counted / BILLION:.2f} B; params_b sets model states and FLOPs, "
            "the shape sets activations and the KV cache"
        )
    return user_params, scale


def _architecture(
    model: ModelShape, preset: Preset | None, shape: dict[str, int], user_params: float | None
) -> Arch:
    assumptions: list[str] = []
    layers = int(shape["layers"])
    hidden = int(shape["hidden"])
    heads, kv_heads, head_dim, kv_lora = _attention_shape(shape, hidden, assumptions)
    ffn, gated = _mlp_shape(model, preset, shape, hidden, assumptions)
    vocab = int(shape.get("vocab", DEFAULT_VOCAB))
    if "vocab" not in shape:
        assumptions.append(f"vocab = {DEFAULT_VOCAB} (not given)")
    experts = int(shape.get("experts", 1))
    active_experts = int(shape.get("active_experts", min(2, experts)))
    if experts > 1 and "active_experts" not in shape:
        assumptions.append("2 experts per token assumed (not given)")
    tied = (
        model.tied_embeddings
        if model.tied_embeddings is not None
        else (preset.tied_embeddings if preset else False)
    )
    mla = {
        "kv_lora_rank": kv_lora,
        "q_lora_rank": int(shape.get("q_lora_rank", 0)),
        "rope_head_dim": int(shape.get("rope_head_dim", 0)),
        "v_head_dim": int(shape.get("v_head_dim", 0)),
    }
    routing = int(shape.get("routing_node_limit", 0)) if experts > 1 else 0
    mtp_depth = int(shape.get("mtp_depth", 0))
    moe = {
        "expert_ffn": int(shape.get("expert_ffn", 0)),
        "shared_experts": int(shape.get("shared_experts", 0)) if experts > 1 else 0,
        "dense_layers": min(layers, int(shape.get("dense_layers", 0))) if experts > 1 else 0,
    }
    # The same dimensions count the parameters and describe the architecture.
    dims = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn": ffn,
        "vocab": vocab,
        "experts": experts,
        "active_experts": active_experts,
        **moe,
        **mla,
    }
    count = count_params(
        **dims,
        gated_ffn=gated,
        tied_embeddings=tied,
        learned_positions=preset.learned_positions if preset else 0,
    )
    params, scale = _scaled(count.total, user_params, assumptions)
    convention = f"shape from preset {preset.id} ({preset.source})" if preset else "shape as given"
    active = count.active * scale
    if model.active_params_b is not None:
        active = model.active_params_b * BILLION
    return Arch(
        name=preset.name if preset else None,
        params=params,
        active_params=min(active, params),
        expert_params=count.experts * scale,
        embedding_params=min(count.embeddings * scale, params),
        gated_ffn=gated,
        coarse=False,
        convention=convention,
        assumptions=tuple(assumptions),
        input_embedding_params=min(count.input_embeddings * scale, params),
        routing_node_limit=routing,
        mtp_depth=mtp_depth,
        **dims,
    )


def _coarse(model: ModelShape, params: float) -> Arch:
    experts = model.experts or 1
    active_experts = model.active_experts or min(2, experts)
    # MoE without a shape: experts hold the MLPs (8·h² each of the 12·h² per layer), so the
    # active share is (4 + 8k)/(4 + 8E) of the parameters (Mixtral 8x7B: 29% vs 28% real).
    if model.active_params_b is not None:
        active = model.active_params_b * BILLION
    elif experts > 1:
        active = params * (4 + 8 * active_experts) / (4 + 8 * experts)
    else:
        active = params
    expert_params = params * 8 * experts / (4 + 8 * experts) if experts > 1 else 0.0
    # The shape follows the compute per token (a dense model of the active size).
    layers, hidden = coarse_shape(active)
    heads = max(1, hidden // DEFAULT_HEAD_DIM)
    embed = float(DEFAULT_VOCAB * hidden * 2)
    return Arch(
        name=None,
        params=params,
        active_params=min(active, params),
        expert_params=expert_params,
        embedding_params=min(embed, 0.1 * params),
        input_embedding_params=min(embed / 2, 0.05 * params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=DEFAULT_HEAD_DIM,
        ffn=4 * hidden,
        vocab=DEFAULT_VOCAB,
        experts=experts,
        active_experts=active_experts,
        gated_ffn=False,
        coarse=True,
        convention=(
            "coarse: only params_b given; shape derived as hidden = (128·N/12)^(1/3) "
            f"rounded to 1024 = {hidden}, layers = N/(12·hidden²) = {layers}, "
            f"heads = hidden/128 = {heads}, no GQA, ffn = 4·hidden, vocab {DEFAULT_VOCAB}"
        ),
        assumptions=("coarse shape: activations and KV cache are plausible, not exact",),
        mtp_depth=model.mtp_depth or 0,
    )


def layers_per_stage(arch: Arch, pp: int) -> int:
    """Layers on the fullest pipeline stage (uneven splits put the remainder somewhere)."""
    return math.ceil(arch.layers / max(1, pp))
