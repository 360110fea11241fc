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
    experts: float  # inside expert MLPs (0 for dense models)
    embeddings: float  # input embedding (+ LM head when untied, + learned positions)


@dataclass(frozen=True)
class Arch:
    """A transformer, fully specified. Counts are plain numbers (parameters, not billions)."""

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

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def params_b(self) -> float:
        return self.params / BILLION

    @property
    def dense_params(self) -> float:
        """Parameters outside the experts (all of them for a dense model)."""
        return self.params - self.expert_params

    @property
    def layer_params(self) -> float:
        """Parameters of one transformer block (all experts included)."""
        return (self.params - self.embedding_params) / self.layers


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
) -> ParamCount:
    """Parameters of a decoder-only transformer from its shape.

    Attention: Q and O are hidden × (heads·head_dim); K and V hidden × (kv_heads·head_dim).
    MLP: 2 (GeLU) or 3 (SwiGLU) matrices of hidden × ffn, per expert. Two norms per layer
    and a router per MoE layer are counted; biases are not (they are < 0.1%).
    """
    attn = hidden * head_dim * (2 * heads + 2 * kv_heads)
    mlp_one = (3 if gated_ffn else 2) * hidden * ffn
    router = hidden * experts if experts > 1 else 0
    norms = 2 * hidden
    per_layer_dense = attn + router + norms
    embed = vocab * hidden * (1 if tied_embeddings else 2) + learned_positions * hidden + hidden
    expert_total = layers * mlp_one * experts if experts > 1 else 0.0
    total = layers * (per_layer_dense + mlp_one * experts) + embed
    active = layers * (per_layer_dense + mlp_one * active_experts) + embed
    return ParamCount(float(total), float(active), float(expert_total), float(embed))


def _from_preset(p: Preset) -> dict[str, int]:
    return {
        "layers": p.layers,
        "hidden": p.hidden,
        "heads": p.heads,
        "kv_heads": p.kv_heads,
        "ffn": p.ffn,
        "vocab": p.vocab,
        "experts": p.experts,
        "active_experts": p.active_experts,
    }


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
        k: int(getattr(model, k))
        for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts")
        if getattr(model, k) is not None
    }
    if model.active_experts is not None:
        given["active_experts"] = model.active_experts
    shape = {**base, **given}
    user_params = model.params_b * BILLION if model.params_b is not None else None
    if "layers" in shape and "hidden" in shape:
        return _architecture(model, preset, shape, user_params)
    assert user_params is not None  # ModelShape guarantees params_b, a preset or the shape
    return _coarse(model, user_params)


def _architecture(
    model: ModelShape, preset: Preset | None, shape: dict[str, int], user_params: float | None
) -> Arch:
    assumptions: list[str] = []
    layers = int(shape["layers"])
    hidden = int(shape["hidden"])
    if "heads" in shape:
        heads = int(shape["heads"])
    else:
        heads = max(1, hidden // DEFAULT_HEAD_DIM)
        assumptions.append(f"heads = hidden/128 = {heads} (not given)")
    kv_heads = int(shape.get("kv_heads", heads))
    if "kv_heads" not in shape:
        assumptions.append("kv_heads = heads (no grouped-query attention assumed)")
    head_dim = max(1, hidden // heads)
    untouched_preset = preset is not None and all(
        getattr(model, k) is None for k in ("layers", "hidden", "heads", "ffn")
    )
    if "ffn" in shape:
        ffn = int(shape["ffn"])
        gated = preset.gated_ffn if untouched_preset and preset else True
        if preset is None:
            assumptions.append("gated (SwiGLU) feed-forward assumed, as in Llama/Qwen/Mistral")
    else:
        ffn, gated = 4 * hidden, False
        assumptions.append(f"ffn = 4·hidden = {ffn}, GeLU MLP (not given)")
    vocab = int(shape.get("vocab", DEFAULT_VOCAB))
    if "vocab" not in shape:
        assumptions.append(f"vocab = {DEFAULT_VOCAB} (not given)")
    experts = int(shape.get("experts", 1))
    active_experts = int(shape.get("active_experts", min(2, experts)))
    if experts > 1 and "active_experts" not in shape:
        assumptions.append("2 experts per token assumed (not given)")
    count = count_params(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=ffn,
        vocab=vocab,
        gated_ffn=gated,
        tied_embeddings=preset.tied_embeddings if preset else False,
        experts=experts,
        active_experts=active_experts,
        learned_positions=preset.learned_positions if preset else 0,
    )
    params, scale = count.total, 1.0
    convention = f"shape from preset {preset.id} ({preset.source})" if preset else "shape as given"
    if user_params is not None:
        scale = user_params / count.total
        params = user_params
        if abs(scale - 1.0) > 0.10:
            assumptions.append(
                f"params_b {user_params / BILLION:.2f} differs from the shape's count "
                f"{count.total / BILLION:.2f} B; params_b sets model states and FLOPs, "
                "the shape sets activations and the KV cache"
            )
    active = count.active * scale
    if model.active_params_b is not None:
        active = model.active_params_b * BILLION
    return Arch(
        name=preset.name if preset else None,
        params=params,
        active_params=min(active, params),
        expert_params=count.experts * scale,
        embedding_params=min(count.embeddings * scale, params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=ffn,
        vocab=vocab,
        experts=experts,
        active_experts=active_experts,
        gated_ffn=gated,
        coarse=False,
        convention=convention,
        assumptions=tuple(assumptions),
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
    )


def round_up_div(a: int, b: int) -> int:
    return -(-a // b)


def layers_per_stage(arch: Arch, pp: int) -> int:
    """Layers on the fullest pipeline stage (uneven splits put the remainder somewhere)."""
    return math.ceil(arch.layers / max(1, pp))
