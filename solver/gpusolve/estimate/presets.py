"""Shapes of common open models, copied from their published configs.

Each preset cites the config it comes from (Hugging Face `config.json` field names in
brackets). `published_params_b` is the model card's headline size; the parameter count
the estimator uses is recomputed from the shape (`shapes.count_params`), and a test keeps
the two within a few per cent so a typo in a shape cannot hide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Preset:
    id: str
    name: str
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (== heads without GQA)
    ffn: int  # intermediate_size / ffn_dim
    vocab: int  # vocab_size
    gated_ffn: bool  # SwiGLU (3 matrices) vs GeLU MLP (2 matrices)
    tied_embeddings: bool  # tie_word_embeddings: input embedding reused as LM head
    published_params_b: float
    source: str
    learned_positions: int = 0  # rows of a learned position embedding (GPT-3, OPT)
    experts: int = 1  # num_local_experts / n_routed_experts (MoE)
    active_experts: int = 1  # num_experts_per_tok
    aliases: tuple[str, ...] = ()
    head_dim: int = 0  # 0 = hidden / heads
    expert_ffn: int = 0  # moe_intermediate_size (0 = ffn)
    shared_experts: int = 0  # n_shared_experts
    dense_layers: int = 0  # first_k_dense_replace
    kv_lora_rank: int = 0  # MLA (DeepSeek-V2/V3)
    q_lora_rank: int = 0
    rope_head_dim: int = 0  # qk_rope_head_dim
    v_head_dim: int = 0
    routing_node_limit: int = 0  # n_limited_groups: most nodes one token is sent to
    mtp_depth: int = 0  # num_nextn_predict_layers: multi-token prediction modules (training)


def _release(base: Preset, name: str, repo: str, alias: str) -> Preset:
    """Another model of `base`'s shape: its id is its name in lower case with hyphens (also
    listed without the first hyphen, as the hand-written presets list it), its config the
    Hugging Face `repo`'s, and `alias` one more name for it."""
    preset_id = name.lower().replace(" ", "-")
    return replace(
        base,
        id=preset_id,
        name=name,
        source=f"huggingface.co/{repo}/blob/main/config.json",
        aliases=(preset_id.replace("-", "", 1), alias),
    )


# meta-llama/Meta-Llama-3-8B config.json (Llama 3.1 8B has the same shape):
# hidden_size 4096, intermediate_size 14336, heads 32, layers 32, kv_heads 8, vocab 128256.
LLAMA_3_8B = Preset(
    "llama-3-8b",
    "Llama 3 8B",
    32,
    4096,
    32,
    8,
    14336,
    128256,
    True,
    False,
    8.03,
    "huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
    aliases=("llama3-8b", "meta-llama-3-8b"),
)
# meta-llama/Meta-Llama-3-70B config.json: hidden_size 8192, intermediate_size 28672,
# heads 64, layers 80, kv_heads 8, vocab 128256.
LLAMA_3_70B = Preset(
    "llama-3-70b",
    "Llama 3 70B",
    80,
    8192,
    64,
    8,
    28672,
    128256,
    True,
    False,
    70.6,
    "huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
    aliases=("llama3-70b", "meta-llama-3-70b"),
)
# mistralai/Mistral-7B-v0.1 config.json: hidden_size 4096, intermediate_size 14336,
# heads 32, layers 32, kv_heads 8, vocab 32000.
MISTRAL_7B = Preset(
    "mistral-7b",
    "Mistral 7B",
    32,
    4096,
    32,
    8,
    14336,
    32000,
    True,
    False,
    7.24,
    "huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
    aliases=("mistral-7b-v0.1",),
)


_PRESETS: tuple[Preset, ...] = (
    # meta-llama/Llama-2-7b-hf config.json: hidden_size 4096, intermediate_size 11008,
    # num_attention_heads 32, num_hidden_layers 32, num_key_value_heads 32, vocab_size 32000.
    Preset(
        "llama-2-7b",
        "Llama 2 7B",
        32,
        4096,
        32,
        32,
        11008,
        32000,
        True,
        False,
        6.74,
        "huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
        aliases=("llama2-7b",),
    ),
    # meta-llama/Llama-2-13b-hf config.json: hidden_size 5120, intermediate_size 13824,
    # num_attention_heads 40, num_hidden_layers 40, num_key_value_heads 40, vocab_size 32000.
    Preset(
        "llama-2-13b",
        "Llama 2 13B",
        40,
        5120,
        40,
        40,
        13824,
        32000,
        True,
        False,
        13.0,
        "huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
        aliases=("llama2-13b",),
    ),
    # meta-llama/Llama-2-70b-hf config.json: hidden_size 8192, intermediate_size 28672,
    # num_attention_heads 64, num_hidden_layers 80, num_key_value_heads 8 (GQA), vocab 32000.
    Preset(
        "llama-2-70b",
        "Llama 2 70B",
        80,
        8192,
        64,
        8,
        28672,
        32000,
        True,
        False,
        69.0,
        "huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json",
        aliases=("llama2-70b",),
    ),
    LLAMA_3_8B,
    # meta-llama/Llama-3.1-8B config.json: same shape as Llama 3 8B (rope scaling differs).
    _release(LLAMA_3_8B, "Llama 3.1 8B", "meta-llama/Llama-3.1-8B", "meta-llama-3.1-8b"),
    LLAMA_3_70B,
    # meta-llama/Llama-3.1-70B config.json: same shape as Llama 3 70B.
    _release(LLAMA_3_70B, "Llama 3.1 70B", "meta-llama/Llama-3.1-70B", "meta-llama-3.1-70b"),
    # meta-llama/Llama-3.1-405B config.json: hidden_size 16384, intermediate_size 53248,
    # heads 128, layers 126, kv_heads 8, vocab 128256.
    Preset(
        "llama-3.1-405b",
        "Llama 3.1 405B",
        126,
        16384,
        128,
        8,
        53248,
        128256,
        True,
        False,
        405.0,
        "huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json",
        aliases=("llama3.1-405b", "meta-llama-3.1-405b"),
    ),
    # Qwen/Qwen2.5-7B config.json: hidden_size 3584, intermediate_size 18944, heads 28,
    # layers 28, kv_heads 4, vocab 152064, tie_word_embeddings false.
    Preset(
        "qwen2.5-7b",
        "Qwen2.5 7B",
        28,
        3584,
        28,
        4,
        18944,
        152064,
        True,
        False,
        7.61,
        "huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json",
        aliases=("qwen-2.5-7b",),
    ),
    # Qwen/Qwen2.5-14B config.json: hidden_size 5120, intermediate_size 13824, heads 40,
    # layers 48, kv_heads 8, vocab 152064.
    Preset(
        "qwen2.5-14b",
        "Qwen2.5 14B",
        48,
        5120,
        40,
        8,
        13824,
        152064,
        True,
        False,
        14.7,
        "huggingface.co/Qwen/Qwen2.5-14B/blob/main/config.json",
        aliases=("qwen-2.5-14b",),
    ),
    # Qwen/Qwen2.5-32B config.json: hidden_size 5120, intermediate_size 27648, heads 40,
    # layers 64, kv_heads 8, vocab 152064.
    Preset(
        "qwen2.5-32b",
        "Qwen2.5 32B",
        64,
        5120,
        40,
        8,
        27648,
        152064,
        True,
        False,
        32.5,
        "huggingface.co/Qwen/Qwen2.5-32B/blob/main/config.json",
        aliases=("qwen-2.5-32b",),
    ),
    # Qwen/Qwen2.5-72B config.json: hidden_size 8192, intermediate_size 29568, heads 64,
    # layers 80, kv_heads 8, vocab 152064.
    Preset(
        "qwen2.5-72b",
        "Qwen2.5 72B",
        80,
        8192,
        64,
        8,
        29568,
        152064,
        True,
        False,
        72.7,
        "huggingface.co/Qwen/Qwen2.5-72B/blob/main/config.json",
        aliases=("qwen-2.5-72b",),
    ),
    MISTRAL_7B,
    # mistralai/Mixtral-8x7B-v0.1 config.json: Mistral 7B's shape with num_local_experts 8,
    # num_experts_per_tok 2 (46.7B total, 12.9B active per the model card).
    replace(
        _release(MISTRAL_7B, "Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b-v0.1"),
        published_params_b=46.7,
        experts=8,
        active_experts=2,
    ),
    # mistralai/Mixtral-8x22B-v0.1 config.json: hidden_size 6144, intermediate_size 16384,
    # heads 48, layers 56, kv_heads 8, vocab 32000 (v0.1), num_local_experts 8,
    # num_experts_per_tok 2 (141B total, 39B active per the model card).
    Preset(
        "mixtral-8x22b",
        "Mixtral 8x22B",
        56,
        6144,
        48,
        8,
        16384,
        32000,
        True,
        False,
        141.0,
        "huggingface.co/mistralai/Mixtral-8x22B-v0.1/blob/main/config.json",
        experts=8,
        active_experts=2,
        aliases=("mixtral-8x22b-v0.1",),
    ),
    # GPT-3 175B: Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
    # n_layers 96, d_model 12288, n_heads 96, d_head 128, d_ff = 4 d_model, n_ctx 2048;
    # GPT-2 BPE vocabulary of 50257 with tied input/output embeddings (Radford et al. 2019).
    Preset(
        "gpt-3-175b",
        "GPT-3 175B",
        96,
        12288,
        96,
        96,
        4 * 12288,
        50257,
        False,
        True,
        175.0,
        "Brown et al. 2020, arXiv:2005.14165, Table 2.1",
        learned_positions=2048,
        aliases=("gpt3-175b", "gpt-3", "gpt3"),
    ),
    # facebook/opt-13b config.json: hidden_size 5120, ffn_dim 20480, num_attention_heads 40,
    # num_hidden_layers 40, vocab_size 50272, max_position_embeddings 2048 (+2 offset rows),
    # word embeddings tied to the LM head.
    Preset(
        "opt-13b",
        "OPT-13B",
        40,
        5120,
        40,
        40,
        20480,
        50272,
        False,
        True,
        13.0,
        "huggingface.co/facebook/opt-13b/blob/main/config.json",
        learned_positions=2050,
        aliases=("opt13b",),
    ),
    # LLaMA 65B: Touvron et al. 2023, "LLaMA: Open and Efficient Foundation Language Models",
    # Table 2 (dimension 8192, 64 heads, 80 layers); huggyllama/llama-65b config.json:
    # intermediate_size 22016, vocab_size 32000, untied embeddings.
    Preset(
        "llama-65b",
        "LLaMA 65B",
        80,
        8192,
        64,
        64,
        22016,
        32000,
        True,
        False,
        65.2,
        "Touvron et al. 2023, arXiv:2302.13971, Table 2; huggyllama/llama-65b config.json",
        aliases=("llama1-65b", "llama-1-65b"),
    ),
    # deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json: dim 7168, n_layers 61,
    # n_dense_layers 3, inter_dim 18432, moe_inter_dim 2048, n_heads 128,
    # n_routed_experts 256, n_shared_experts 1, n_activated_experts 8, q_lora_rank 1536,
    # kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
    # vocab_size 129280, n_limited_groups 4 (a token goes to at most 4 nodes; 671B total,
    # 37B active: DeepSeek-V3 report, arXiv:2412.19437 §3.2.2, §4.2). Multi-token prediction:
    # pre-training sets the MTP depth D to 1 (§4.2; §2.2: one more Transformer block, a
    # 2h x h projection, the embedding and output head shared); the Hugging Face config.json
    # says num_nextn_predict_layers 1, and the repository's README counts "671B of the Main
    # Model weights and 14B of the Multi-Token Prediction (MTP) Module weights" (the 671B
    # headline, and `published_params_b`, leave the MTP module out).
    Preset(
        "deepseek-v3",
        "DeepSeek-V3",
        61,
        7168,
        128,
        128,
        18432,
        129280,
        True,
        False,
        671.0,
        "github.com/deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json; arXiv:2412.19437",
        experts=256,
        active_experts=8,
        aliases=("deepseek-v3-671b", "deepseek-r1"),
        head_dim=128,
        expert_ffn=2048,
        shared_experts=1,
        dense_layers=3,
        kv_lora_rank=512,
        q_lora_rank=1536,
        rope_head_dim=64,
        v_head_dim=128,
        routing_node_limit=4,
        mtp_depth=1,
    ),
)

PRESETS: dict[str, Preset] = {p.id: p for p in _PRESETS}


def _key(name: str) -> str:
    """Normalise a user's spelling: case, spaces, underscores, 'meta-'/'-hf' decorations."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    key = key.removeprefix("meta-llama/").removeprefix("mistralai/").removeprefix("qwen/")
    key = key.removeprefix("facebook/").removesuffix("-hf")
    return key.replace("-", "")


_LOOKUP: dict[str, Preset] = {}
for _p in _PRESETS:
    for _name in (_p.id, _p.name, *_p.aliases):
        _LOOKUP[_key(_name)] = _p


def find_preset(name: str) -> Preset | None:
    """The preset for a name, tolerant of case, dashes and spaces ('Llama 2 70B')."""
    return _LOOKUP.get(_key(name))


def preset_names() -> list[str]:
    return [p.id for p in _PRESETS]
