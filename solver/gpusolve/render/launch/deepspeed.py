"""DeepSpeed launches: the config (ZeRO stage, batch, recomputation, offload), the model in
Hugging Face terms, and for LoRA/QLoRA the adapter and 4-bit settings in PEFT's and
bitsandbytes' own field names.

Keys are DeepSpeed's (docs/_pages/config-json.md at the commit FLAG_SOURCES names); the
model file is a Hugging Face `config.json` (transformers' LlamaConfig, Qwen2Config,
MixtralConfig, DeepseekV3Config, GPT2Config, OPTConfig, GPTNeoXConfig field names); the
adapter file is PEFT's adapter_config.json (LoraConfig), which `LoraConfig.from_pretrained`
reads.
"""

from __future__ import annotations

from gpusolve.estimate.trainshape import lora_rank
from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import FineTuneWorkload, Training
from gpusolve.render.launch.megatron import global_batch
from gpusolve.render.launch.models import Model


def uses_deepspeed(d: Deployment, w: Training) -> bool:
    """LoRA/QLoRA (adapters through PEFT), and every run without tensor, pipeline, context
    or expert parallelism that ZeRO-2/3 shards or that fine-tunes a checkpoint: DeepSpeed
    shards as the plan assumed and loads the Hugging Face checkpoint as it is published.
    Anything else with model parallelism goes to Megatron-LM."""
    p = d.parallel
    if w.kind in ("lora", "qlora"):
        return True
    if p.tp == p.pp == p.cp == p.ep == 1:
        return p.zero_stage >= 2 or w.kind == "full_finetune"
    return False


def deepspeed_config(d: Deployment, w: Training) -> dict[str, object]:
    p = d.parallel
    zero: dict[str, object] = {"stage": p.zero_stage, "overlap_comm": True}
    if "offload_optimizer" in w.memory_savings:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    config: dict[str, object] = {
        "train_micro_batch_size_per_gpu": p.micro_batch,
        "gradient_accumulation_steps": p.grad_accum,
        "train_batch_size": global_batch(d),
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
    }
    if p.gradient_checkpointing != "none":
        # DeepSpeed's checkpointing API settings; the model turns recomputation on itself
        # (train.sh passes --gradient_checkpointing to a Hugging Face Trainer script).
        config["activation_checkpointing"] = {
            "partition_activations": p.tp > 1,
            "contiguous_memory_optimization": False,
            "cpu_checkpointing": False,
        }
    if p.tp > 1:  # DeepSpeed's automatic tensor parallelism
        config["tensor_parallel"] = {"autotp_size": p.tp}
    if w.precision == "fp16":
        config["fp16"] = {"enabled": True}
    elif w.precision != "fp32":
        config["bf16"] = {"enabled": True}
    return config


# The workload's adapter targets in transformers' Llama-family module names.
PEFT_MODULES = {
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "o": "o_proj",
    "gate": "gate_proj",
    "up": "up_proj",
    "down": "down_proj",
}


def adapter_config(w: FineTuneWorkload, model: Model) -> dict[str, object]:
    """PEFT's LoraConfig as adapter_config.json: the plan's rank, targets (default every
    linear layer of every block) and dropout, as the plan counted the adapter and what it
    keeps (estimate/memory.py lora_params, estimate/frozenbase.py)."""
    rank, _ = lora_rank(w)
    targets = w.lora.targets if w.lora else None
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": model.checkpoint,
        "r": rank,
        "target_modules": [PEFT_MODULES[t] for t in targets] if targets else "all-linear",
        "lora_dropout": w.lora.dropout if w.lora else 0.0,
        "bias": "none",
    }


def quantization_config() -> dict[str, object]:
    """QLoRA's frozen base (Dettmers et al. 2023 §3: 4-bit NormalFloat, double quantization,
    BF16 compute), as transformers' BitsAndBytesConfig names the fields."""
    return {
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16",
    }


def hf_config(model: Model, seq: int) -> dict[str, object]:
    """The model in Hugging Face terms, as its config.json would hold it."""
    arch, fam = model.arch, model.family
    if fam.positions == "learned_absolute" and fam.activation == "relu":
        return {
            "architectures": ["OPTForCausalLM"], "model_type": "opt",
            "hidden_size": arch.hidden, "ffn_dim": arch.ffn,
            "num_hidden_layers": arch.layers, "num_attention_heads": arch.heads,
            "vocab_size": arch.vocab, "max_position_embeddings": max(seq, 2048),
            "word_embed_proj_dim": arch.hidden, "activation_function": "relu",
            "enable_bias": True, "do_layer_norm_before": True, "tie_word_embeddings": True,
        }  # fmt: skip
    if fam.positions == "learned_absolute":
        return {
            "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
            "n_embd": arch.hidden, "n_inner": arch.ffn, "n_layer": arch.layers,
            "n_head": arch.heads, "vocab_size": arch.vocab, "n_positions": max(seq, 2048),
            "activation_function": "gelu_new", "layer_norm_epsilon": fam.norm_eps,
            "tie_word_embeddings": True,
        }  # fmt: skip
    if fam.activation != "swiglu":  # LayerNorm, RoPE, GeLU MLP of two matrices
        return {
            "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
            "hidden_size": arch.hidden, "intermediate_size": arch.ffn,
            "num_hidden_layers": arch.layers, "num_attention_heads": arch.heads,
            "vocab_size": arch.vocab, "max_position_embeddings": seq, "rotary_pct": 1.0,
            "rotary_emb_base": fam.rope_base, "layer_norm_eps": fam.norm_eps,
            "hidden_act": "gelu", "use_parallel_residual": False,
            "tie_word_embeddings": model.tied,
        }  # fmt: skip
    config: dict[str, object] = {
        "hidden_size": arch.hidden,
        "intermediate_size": arch.ffn,
        "num_hidden_layers": arch.layers,
        "num_attention_heads": arch.heads,
        "num_key_value_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "vocab_size": arch.vocab,
        "max_position_embeddings": seq,
        "rms_norm_eps": fam.norm_eps,
        "rope_theta": fam.rope_base,
        "hidden_act": "silu",
        "tie_word_embeddings": model.tied,
    }
    if fam.rope_scaling == "llama3":
        # Llama 3.1's config.json: max_position_embeddings 131072 (8192 scaled by RoPE).
        config["max_position_embeddings"] = max(seq, 131072)
        config["rope_scaling"] = {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
        }  # fmt: skip
    if arch.is_mla:
        return {**config, **_deepseek_v3(model)}
    if arch.is_moe:
        return {
            "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", **config,
            "num_local_experts": arch.experts, "num_experts_per_tok": arch.active_experts,
        }  # fmt: skip
    if fam.qkv_bias:
        return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", **config}
    if fam.sliding_window:
        return {
            "architectures": ["MistralForCausalLM"], "model_type": "mistral", **config,
            "sliding_window": fam.sliding_window,
        }  # fmt: skip
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **config}


def _deepseek_v3(model: Model) -> dict[str, object]:
    arch, fam = model.arch, model.family
    out: dict[str, object] = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "moe_intermediate_size": arch.expert_width,
        "n_routed_experts": arch.experts,
        "n_shared_experts": arch.shared_experts,
        "num_experts_per_tok": arch.active_experts,
        "first_k_dense_replace": arch.dense_layers,
        "q_lora_rank": arch.q_lora_rank or None,
        "kv_lora_rank": arch.kv_lora_rank,
        "qk_nope_head_dim": arch.head_dim,
        "qk_rope_head_dim": arch.rope_head_dim,
        "v_head_dim": arch.value_head_dim,
        "num_nextn_predict_layers": arch.mtp_depth,
    }
    if fam.router is not None:
        out |= {
            "scoring_func": fam.router.score,
            "topk_method": "noaux_tc" if fam.router.expert_bias else "greedy",
            "routed_scaling_factor": fam.router.scaling,
            "n_group": fam.router.groups,
            "topk_group": fam.router.group_topk,
        }
    if fam.rope_scaling == "yarn":
        out["rope_scaling"] = {"type": "yarn", "factor": fam.yarn_factor}
    return out
