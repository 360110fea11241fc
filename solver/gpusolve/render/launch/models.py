"""What the engines need to know about a model beyond the shape the plan sized: the
checkpoint to load or serve, its norm, positions, biases and router, from the published
configs (Hugging Face `config.json` field names in brackets).

The shape itself (layers, widths, heads, experts, MLA ranks) is the plan's: `resolve_arch`
of the workload's model. These facts say how that shape is built, so that the launched
model is the one the checkpoint holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusolve.estimate.presets import find_preset
from gpusolve.estimate.shapes import Arch, resolve_arch
from gpusolve.models.requirements import InferenceWorkload, Workload

_HF = re.compile(r"huggingface\.co/([\w.-]+/[\w.-]+)")


@dataclass(frozen=True)
class Router:
    """An MoE router other than the softmax top-k default (DeepSeek-V3 §2.1.2)."""

    score: str  # scoring_func
    expert_bias: bool  # topk_method noaux_tc: the auxiliary-loss-free bias
    scaling: float  # routed_scaling_factor
    groups: int  # n_group
    group_topk: int  # topk_group
    seq_aux_loss: float = 0.0  # sequence-wise balance loss weight (0: the default aux loss)
    bias_update_rate: float = 0.0  # the expert bias's update speed


@dataclass(frozen=True)
class Family:
    """How a model's blocks are built. `chat` is the instruction-tuned checkpoint a chat
    service serves; `base` the pretrained one a fine-tune starts from (None: the preset's
    source names it)."""

    norm: str  # "RMSNorm" | "LayerNorm"
    norm_eps: float  # rms_norm_eps / layer_norm_epsilon
    positions: str  # "rope" | "learned_absolute"
    rope_base: int = 10000  # rope_theta
    rope_scaling: str | None = None  # "llama3" (factor 8) | "yarn"
    yarn_factor: float = 0.0  # rope_scaling.factor of a YaRN model
    linear_bias: bool = False  # biases on every Linear (GPT-2/3, OPT)
    qkv_bias: bool = False  # biases on Q, K, V only (Qwen2)
    activation: str = "swiglu"  # "swiglu" | "gelu" | "relu"
    chat: str | None = None
    base: str | None = None
    router: Router | None = None
    qk_norm: bool = False  # MLA's norms on the query and key-value latents
    sliding_window: int = 0  # sliding_window: attention span of every layer (0 = full)
    source: str = ""


LLAMA2 = "rms_norm_eps 1e-05, rope_theta 10000 (default), attention_bias false"
LLAMA3 = "rms_norm_eps 1e-05, rope_theta 500000.0, attention_bias false"
QWEN25 = "rms_norm_eps 1e-06, rope_theta 1000000.0; Qwen2 attention has q/k/v biases"

FAMILIES: dict[str, Family] = {
    "llama-2-7b": Family(
        "RMSNorm", 1e-5, "rope", chat="meta-llama/Llama-2-7b-chat-hf", source=LLAMA2
    ),
    "llama-2-13b": Family(
        "RMSNorm", 1e-5, "rope", chat="meta-llama/Llama-2-13b-chat-hf", source=LLAMA2
    ),
    "llama-2-70b": Family(
        "RMSNorm", 1e-5, "rope", chat="meta-llama/Llama-2-70b-chat-hf", source=LLAMA2
    ),
    "llama-3-8b": Family(
        "RMSNorm", 1e-5, "rope", 500000, chat="meta-llama/Meta-Llama-3-8B-Instruct", source=LLAMA3
    ),
    "llama-3-70b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        500000,
        chat="meta-llama/Meta-Llama-3-70B-Instruct",
        source=LLAMA3,
    ),
    "llama-3.1-8b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        500000,
        "llama3",
        chat="meta-llama/Llama-3.1-8B-Instruct",
        source=LLAMA3 + ', rope_scaling {"rope_type": "llama3", "factor": 8.0}',
    ),
    "llama-3.1-70b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        500000,
        "llama3",
        chat="meta-llama/Llama-3.1-70B-Instruct",
        source=LLAMA3 + ', rope_scaling {"rope_type": "llama3", "factor": 8.0}',
    ),
    "llama-3.1-405b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        500000,
        "llama3",
        chat="meta-llama/Llama-3.1-405B-Instruct",
        source=LLAMA3 + ', rope_scaling {"rope_type": "llama3", "factor": 8.0}',
    ),
    "qwen2.5-7b": Family(
        "RMSNorm",
        1e-6,
        "rope",
        1000000,
        qkv_bias=True,
        chat="Qwen/Qwen2.5-7B-Instruct",
        source=QWEN25,
    ),
    "qwen2.5-14b": Family(
        "RMSNorm",
        1e-6,
        "rope",
        1000000,
        qkv_bias=True,
        chat="Qwen/Qwen2.5-14B-Instruct",
        source=QWEN25,
    ),
    "qwen2.5-32b": Family(
        "RMSNorm",
        1e-6,
        "rope",
        1000000,
        qkv_bias=True,
        chat="Qwen/Qwen2.5-32B-Instruct",
        source=QWEN25,
    ),
    "qwen2.5-72b": Family(
        "RMSNorm",
        1e-6,
        "rope",
        1000000,
        qkv_bias=True,
        chat="Qwen/Qwen2.5-72B-Instruct",
        source=QWEN25,
    ),
    "mistral-7b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        10000,
        chat="mistralai/Mistral-7B-Instruct-v0.1",
        sliding_window=4096,
        source="rms_norm_eps 1e-05, rope_theta 10000.0, sliding_window 4096",
    ),
    "mixtral-8x7b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        1000000,
        chat="mistralai/Mixtral-8x7B-Instruct-v0.1",
        source="rms_norm_eps 1e-05, rope_theta 1000000.0",
    ),
    "mixtral-8x22b": Family(
        "RMSNorm",
        1e-5,
        "rope",
        1000000,
        chat="mistralai/Mixtral-8x22B-Instruct-v0.1",
        source="rms_norm_eps 1e-05, rope_theta 1000000",
    ),
    # GPT-3 (Brown et al. 2020 §2.1: GPT-2's architecture, Radford et al. 2019 §2.3):
    # pre-LayerNorm, learned positions, biased GeLU MLP, tied embeddings; no public weights.
    "gpt-3-175b": Family(
        "LayerNorm",
        1e-5,
        "learned_absolute",
        linear_bias=True,
        activation="gelu",
        source="GPT-2/3: LayerNorm epsilon 1e-5, learned positions, biases, GeLU",
    ),
    "opt-13b": Family(
        "LayerNorm",
        1e-5,
        "learned_absolute",
        linear_bias=True,
        activation="relu",
        source="facebook/opt-13b config.json: activation_function relu, enable_bias true",
    ),
    "llama-65b": Family(
        "RMSNorm",
        1e-6,
        "rope",
        base="huggyllama/llama-65b",
        source="huggyllama/llama-65b config.json: rms_norm_eps 1e-06",
    ),
    # deepseek-ai/DeepSeek-V3 config.json: rms_norm_eps 1e-06, rope_theta 10000,
    # rope_scaling {"type": "yarn", "factor": 40, ...}, scoring_func sigmoid, topk_method
    # noaux_tc, routed_scaling_factor 2.5, n_group 8, topk_group 4; q_a_layernorm and
    # kv_a_layernorm on the MLA latents. The released model is the chat one (its base is
    # deepseek-ai/DeepSeek-V3-Base).
    "deepseek-v3": Family(
        "RMSNorm",
        1e-6,
        "rope",
        10000,
        "yarn",
        yarn_factor=40.0,
        chat="deepseek-ai/DeepSeek-V3",
        base="deepseek-ai/DeepSeek-V3-Base",
        # Training: the sequence-wise balance loss at alpha 0.0001 and the bias update speed
        # gamma 0.001 (DeepSeek-V3 report §2.1.2, §4.2).
        router=Router("sigmoid", True, 2.5, 8, 4, seq_aux_loss=1e-4, bias_update_rate=1e-3),
        qk_norm=True,
        source="deepseek-ai/DeepSeek-V3 config.json",
    ),
}

# A model given by its shape only: the Llama convention every shape-only default of the
# estimator assumes (shapes.py: SwiGLU, 128-wide heads, no biases, untied).
SHAPE_ONLY = Family("RMSNorm", 1e-5, "rope", source="the Llama convention (shape given, no preset)")
# The coarse path's invented shape is GeLU, 4·hidden (shapes.coarse_shape).
COARSE = Family("LayerNorm", 1e-5, "rope", activation="gelu", source="coarse shape (invented)")


@dataclass(frozen=True)
class Model:
    """The plan's model and how to build, load or serve it."""

    arch: Arch
    family: Family
    preset: str | None
    checkpoint: str | None  # the Hugging Face repository a fine-tune loads
    served: str | None  # the repository a service serves
    tied: bool

    @property
    def named(self) -> bool:
        """True when the architecture is a published one (not invented by the coarse path)."""
        return not self.arch.coarse


def model_of(w: Workload) -> Model:
    arch = resolve_arch(w.model)
    preset = find_preset(w.model.preset) if w.model.preset else None
    if preset is not None:
        family = FAMILIES.get(preset.id, SHAPE_ONLY)
        found = _HF.search(preset.source)
        base = family.base or (found.group(1) if found else None)
        tied = (
            preset.tied_embeddings if w.model.tied_embeddings is None else w.model.tied_embeddings
        )
    else:
        family = COARSE if arch.coarse else SHAPE_ONLY
        if arch.gated_ffn != (family.activation == "swiglu"):
            family = Family(
                family.norm,
                family.norm_eps,
                family.positions,
                activation="swiglu" if arch.gated_ffn else "gelu",
                source=family.source,
            )
        base = None
        tied = bool(w.model.tied_embeddings)
    served = base
    if isinstance(w, InferenceWorkload) and is_chat_service(w) and family.chat:
        served = family.chat
    return Model(arch, family, preset.id if preset else None, base, served, tied)


def is_chat_service(w: InferenceWorkload) -> bool:
    """A service people talk to: latency-bound, or named as a chat or assistant."""
    name = w.name.lower()
    return (
        w.latency_sensitive
        or w.ttft_ms is not None
        or any(word in name for word in ("chat", "assistant", "instruct"))
    )
