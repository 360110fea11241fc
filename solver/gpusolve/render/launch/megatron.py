"""Megatron-LM's `pretrain_gpt.py` arguments for a training deployment.

Flag names are those of NVIDIA/Megatron-LM's megatron/training/arguments.py and the
TransformerConfig / MLATransformerConfig fields it derives flags from
(megatron/core/transformer/transformer_config.py), at the commit FLAG_SOURCES names. The
DeepSeek-V3 flags follow Megatron-LM's own recipe, examples/megatron_fsdp/
sbatch_mfsdp_deepseek_v3.sh at that commit.
"""

from __future__ import annotations

from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.trainshape import mtp_depth_of
from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import Training, TrainingBase
from gpusolve.render.launch.models import Model

# Megatron-FSDP's sharding strategies (arguments.py, --data-parallel-sharding-strategy):
# ZeRO-3 shards optimizer states, gradients and weights; ZeRO-2 the first two.
FSDP_STRATEGY = {3: "optim_grads_params", 2: "optim_grads"}

# The plan's memory savings in Megatron's terms (TransformerConfig.recompute_modules:
# "layernorm" the two norms, "mla_up_proj" MLA's up-projections and RoPE, "moe_act" the
# experts' activation function; all output-discarding recomputation).
RECOMPUTE_MODULES = {
    "recompute_norms": "layernorm",
    "recompute_up_projections": "mla_up_proj",
    "recompute_activation_function": "moe_act",
}


def global_batch(d: Deployment) -> int:
    p = d.parallel
    return p.micro_batch * p.grad_accum * p.dp


def uses_megatron_fsdp(d: Deployment) -> bool:
    """ZeRO-2/3 with model parallelism: Megatron's distributed optimizer shards only the
    optimizer states, so the plan's weight/gradient sharding needs Megatron-FSDP."""
    return d.parallel.zero_stage >= 2


def megatron_args(d: Deployment, w: Training, model: Model) -> list[str]:
    """The arguments for this deployment, one flag per item (values follow their flag)."""
    p = d.parallel
    arch = model.arch
    seq = w.seq_len
    args = [
        "--tensor-model-parallel-size", str(p.tp),
        "--pipeline-model-parallel-size", str(p.pp),
        "--context-parallel-size", str(p.cp),
        "--expert-model-parallel-size", str(p.ep),
        "--micro-batch-size", str(p.micro_batch),
        "--global-batch-size", str(global_batch(d)),
        "--seq-length", str(seq),
    ]  # fmt: skip
    if p.sequence_parallel and p.tp > 1:
        args.append("--sequence-parallel")
    args += _uneven_last_stage(arch.layers, p.pp)
    if p.vp > 1:
        layers_per_rank = -(-arch.layers // p.pp)
        args += ["--num-layers-per-virtual-pipeline-stage", str(max(1, layers_per_rank // p.vp))]
    args += architecture_args(model, seq)
    if mtp_depth_of(w, arch):
        args += ["--mtp-num-layers", str(mtp_depth_of(w, arch))]
    args += sharding_args(d)
    recompute = recompute_args(p.gradient_checkpointing, w, arch)
    args += recompute
    args += precision_args(w.precision)
    if w.precision == "fp8":
        args += fp8_recipe_args(model, recompute)
    if w.kind != "pretrain":  # start from the checkpoint: weights only, iteration 0
        args += ["--finetune", "--no-load-optim", "--no-load-rng"]
    samples = max(1, int(w.tokens_per_run // seq))
    args += [
        "--train-samples",
        str(samples),
        "--save-interval",
        str(save_interval(d, seq, samples)),
    ]
    return args


def save_interval(d: Deployment, seq: int, samples: int) -> int:
    """Steps between checkpoints: the plan's checkpoint interval at its step time (validate_args
    requires one with --save); without a goodput estimate, once at the end of the run."""
    steps = max(1, -(-samples // global_batch(d)))
    if d.goodput is None or d.throughput <= 0:
        return steps
    step_s = global_batch(d) * seq / d.throughput
    return max(1, min(steps, round(d.goodput.checkpoint_interval_min * 60 / step_s)))


def architecture_args(model: Model, seq: int) -> list[str]:
    """The model's shape and build: what makes the parameters the checkpoint's."""
    arch, fam = model.arch, model.family
    learned = fam.positions == "learned_absolute"
    # A learned table has the model's own rows; RoPE needs only the sequence.
    positions = max(seq, _learned_rows(model)) if learned else seq
    args = [
        "--num-layers", str(arch.layers),
        "--hidden-size", str(arch.hidden),
        "--ffn-hidden-size", str(arch.ffn),
        "--num-attention-heads", str(arch.heads),
        "--kv-channels", str(arch.head_dim),
        "--max-position-embeddings", str(positions),
        "--normalization", fam.norm,
        "--norm-epsilon", f"{fam.norm_eps:g}",
        "--position-embedding-type", fam.positions,
    ]  # fmt: skip
    if not learned:
        args += ["--rotary-base", str(fam.rope_base)]
    if fam.rope_scaling == "llama3":  # Megatron's --rope-scaling-factor defaults to 8
        args.append("--use-rope-scaling")
    if fam.sliding_window:  # (left, right) as flash-attention takes it: causal, 0 ahead
        args += ["--window-size", f"{fam.sliding_window},0"]
    if fam.activation == "swiglu":
        args.append("--swiglu")
    if not fam.linear_bias:
        args.append("--disable-bias-linear")
    if fam.qkv_bias:
        args.append("--add-qkv-bias")
    if not model.tied:
        args.append("--untie-embeddings-and-output-weights")
    if arch.is_mla:
        args += _mla(arch, model)
    elif arch.kv_heads != arch.heads:
        args += ["--group-query-attention", "--num-query-groups", str(arch.kv_heads)]
    if arch.is_moe:
        args += _moe(arch, model)
    return args


def _learned_rows(model: Model) -> int:
    from gpusolve.estimate.presets import find_preset

    preset = find_preset(model.preset) if model.preset else None
    return preset.learned_positions if preset else 0


def _mla(arch: Arch, model: Model) -> list[str]:
    """Multi-head latent attention (MLATransformerConfig's fields)."""
    args = [
        "--multi-latent-attention",
        "--q-lora-rank", str(arch.q_lora_rank),
        "--kv-lora-rank", str(arch.kv_lora_rank),
        "--qk-head-dim", str(arch.head_dim),
        "--qk-pos-emb-head-dim", str(arch.rope_head_dim),
        "--v-head-dim", str(arch.value_head_dim),
    ]  # fmt: skip
    if model.family.qk_norm:
        args.append("--qk-layernorm")
    if model.family.rope_scaling == "yarn":  # MLA applies YaRN by default (--rope-type)
        args += [
            "--rotary-scaling-factor", f"{model.family.yarn_factor:g}",
            "--mscale", "1.0",
            "--mscale-all-dim", "1.0",
        ]  # fmt: skip
    return args


def _moe(arch: Arch, model: Model) -> list[str]:
    args = [
        "--num-experts", str(arch.experts),
        "--moe-router-topk", str(arch.active_experts),
        "--moe-ffn-hidden-size", str(arch.expert_width),
        "--moe-grouped-gemm",
        "--moe-token-dispatcher-type", "alltoall",
    ]  # fmt: skip
    if arch.shared_experts:
        shared = arch.shared_experts * arch.expert_width
        args += ["--moe-shared-expert-intermediate-size", str(shared)]
    if arch.dense_layers:
        # A Python list expression Megatron evaluates: 0 a dense layer, 1 an MoE layer.
        pattern = f"[0]*{arch.dense_layers}+[1]*{arch.layers - arch.dense_layers}"
        args += ["--moe-layer-freq", pattern]
    router = model.family.router
    if router is not None:
        args += [
            "--moe-router-score-function", router.score,
            "--moe-router-topk-scaling-factor", f"{router.scaling:g}",
            "--moe-router-num-groups", str(router.groups),
            "--moe-router-group-topk", str(router.group_topk),
        ]  # fmt: skip
        if router.expert_bias:
            args.append("--moe-router-enable-expert-bias")
        if router.bias_update_rate:
            args += ["--moe-router-bias-update-rate", f"{router.bias_update_rate:g}"]
        if router.seq_aux_loss:
            args += [
                "--moe-router-load-balancing-type", "seq_aux_loss",
                "--moe-aux-loss-coeff", f"{router.seq_aux_loss:g}",
            ]  # fmt: skip
    return args


def sharding_args(d: Deployment) -> list[str]:
    """ZeRO-1: the distributed optimizer; ZeRO-2/3: Megatron-FSDP with its checkpoint
    format (validate_args requires fsdp_dtensor)."""
    stage = d.parallel.zero_stage
    if stage >= 2:
        return [
            "--use-megatron-fsdp",
            "--data-parallel-sharding-strategy", FSDP_STRATEGY[min(stage, 3)],
            "--use-distributed-optimizer",
            "--ckpt-format", "fsdp_dtensor",
            "--no-gradient-accumulation-fusion",
        ]  # fmt: skip
    if stage == 1:
        return ["--use-distributed-optimizer"]
    return []


def recompute_args(checkpointing: str, w: TrainingBase, arch: Arch) -> list[str]:
    if checkpointing == "full":
        return [
            "--recompute-granularity", "full",
            "--recompute-method", "uniform",
            "--recompute-num-layers", "1",
        ]  # fmt: skip
    modules = ["core_attn"] if checkpointing == "selective" else []
    # TransformerConfig refuses mla_up_proj without MLA and moe_act without MoE.
    absent = {"mla_up_proj": not arch.is_mla, "moe_act": not arch.is_moe}
    named = [RECOMPUTE_MODULES[s] for s in w.memory_savings if s in RECOMPUTE_MODULES]
    modules += [m for m in named if not absent.get(m, False)]
    args = ["--recompute-granularity", "selective", "--recompute-modules", *modules]
    out = args if modules else []
    if "bf16_moments" in w.memory_savings or "offload_optimizer" in w.memory_savings:
        out += ["--use-precision-aware-optimizer"]
    if "bf16_moments" in w.memory_savings:
        out += ["--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype", "bf16"]
    if "offload_optimizer" in w.memory_savings:
        out += ["--optimizer-cpu-offload"]
    return out


def fp8_recipe_args(model: Model, recompute: list[str]) -> list[str]:
    """FP8 scaling: DeepSeek-V3's fine-grained tiles and blocks (report §3.3.2) are Transformer
    Engine's blockwise recipe; TransformerConfig refuses layernorm or moe_act recomputation
    under the default delayed scaling, so those take per-tensor current scaling."""
    if model.arch.is_mla:
        return ["--fp8-recipe", "blockwise"]
    if {"layernorm", "moe_act"} & set(recompute):
        return ["--fp8-recipe", "tensorwise"]
    return []


def precision_args(precision: str) -> list[str]:
    if precision == "fp16":
        return ["--fp16"]
    if precision == "fp8":  # FP8 GEMMs through Transformer Engine, BF16 elsewhere
        return ["--bf16", "--fp8-format", "hybrid"]
    if precision in ("bf16", "int8", "int4", "nf4"):
        return ["--bf16"]
    return []  # fp32


def _uneven_last_stage(layers: int, pp: int) -> list[str]:
    """Layers that do not divide by PP: every stage but the last holds ceil(layers / pp), as
    the plan's memory assumed for the fullest stage, and the last stage the rest."""
    if pp <= 1 or layers % pp == 0:
        return []
    per_stage = -(-layers // pp)
    last = layers - per_stage * (pp - 1)
    if last < 1:  # e.g. 10 layers on 6 stages: no split with the fullest at ceil(10/6)
        return []
    return ["--decoder-last-pipeline-num-layers", str(last)]


def needs_one_connection(d: Deployment, architecture: str | None) -> bool:
    """validate_args asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP > 1 before
    Blackwell (compute capability < 10), except under FSDP, which asserts it is not 1."""
    p = d.parallel
    if uses_megatron_fsdp(d) or (p.tp == 1 and p.cp == 1):
        return False
    return not (architecture or "").startswith("blackwell")
