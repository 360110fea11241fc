"""The software stack a training run uses, as the bytes its code keeps and moves.

The step and memory models count what a fused stack does (Megatron-core with Transformer
Engine: fused norms, fused SwiGLU, the loss over fp32 logits, Korthikanti et al. 2022 §4). Other
stacks run the same GEMMs but keep and stream more around them; each difference below is read
off the stack's own code, none is fitted:

  megatron  Megatron-LM / NeMo (Megatron-core): the reference, nothing added.
  hf        Hugging Face transformers modelling code under Trainer or accelerate (DeepSpeed and
            FSDP come in through `sharding`), adapters from PEFT. Eager PyTorch:
            - RMSNorm (transformers LlamaRMSNorm.forward, v4.44): the input cast to fp32, its
              square, the mean, the rsqrt product, the cast back, the weight product, each a
              kernel reading and writing its tensor: 36 bytes per element (a fused norm: 4);
              autograd keeps the fp32 input (4 B/element) where a fused norm keeps 2.
            - rotary embeddings (apply_rotary_pos_emb): q·cos, rotate_half (negation and
              concatenation), ·sin and the sum, 24 bytes per element of q and k (fused: none).
            - SwiGLU as `act_fn(gate_proj(x)) * up_proj(x)`: SiLU (4 bytes per element) and the
              product (6) where the fused kernel moves 6; autograd keeps the SiLU output too
              (2 bytes per element of the MLP width).
            - PEFT's LoRA Linear (peft/tuners/lora/layer.py, Linear.forward): `result +
              lora_B(lora_A(dropout(x))) * scaling`, the scaling (4 bytes per output element)
              and the sum (6) as their own kernels on every adapted Linear.
            - the loss (LlamaForCausalLM.forward, v4.44): `logits.float()` kept in the output,
              the shifted `.contiguous()` copy, CrossEntropyLoss's saved log-softmax: three
              fp32 copies of the logits, 12 bytes each.
            - QLoRA: PEFT's `prepare_model_for_kbit_training` casts every parameter left in 16
              bits (embeddings, output layer, norms) to fp32 "for stability".
            - LoRA adapters in fp32 (PEFT `autocast_adapter_dtype=True`, the default since
              0.12) with fp32 AdamW moments: 16 bytes per adapter parameter.
  torchtune PyTorch-native recipes with torch.compile (Inductor fuses the elementwise ops):
            nothing streamed beyond the fused stack; bf16 adapters with AdamW moments in their
            dtype (8 bytes per adapter parameter; the recipe's `dtype: bf16`); the loss by
            `CEWithChunkedOutputLoss` (8 chunks): bf16 logits kept (2 bytes each) and one
            chunk's fp32 upcast and log-softmax at a time (2 x 4 / 8): 3 bytes per logit.

  litgpt    Lightning's LitGPT (lit_gpt @8641822, Fabric, `--precision bf16-true`): eager like
            hf, but its RMSNorm (lit_gpt/rmsnorm.py: `x * x`, the mean, `x * rsqrt(...)`, the
            weight product) stays in 16 bits: 14 bytes per element, nothing kept beyond the
            fused inventory; LoRA as `pretrained + dropout(x) @ A.T @ B.T * scaling`
            (lit_gpt/lora.py); under bf16-true the adapters, their gradients and AdamW's
            moments are bf16 (2 + 2 + 4 bytes); the loss by `chunked_cross_entropy` over
            128-token chunks of bf16 logits, each chunk's log-softmax kept: 4 bytes per logit.

What the backward pass keeps of a frozen base (LoRA/QLoRA; frozenbase.py):
  quantised_input_bytes  per element of a quantised Linear's input, 4-bit and 8-bit bases.
            bitsandbytes' autograd functions (bitsandbytes/autograd/_functions.py): up to 0.43
            `MatMul4Bit.forward` sets `ctx.tensors = (A, B)` whenever a gradient is needed,
            though `backward` reads only B (read in 0.41.1 and 0.43.0); from 0.44.0 it is
            `(None, B)` (read in 0.44.0, 0.45.0, 0.50.2). `MatMul8bitLt.forward` keeps A in
            every version read, in 0.41.1 also `CAt`, A's int8 transpose (1 byte). hf, megatron
            and torchtune: current bitsandbytes (0 for 4-bit, 2 for 8-bit; torchtune's NF4 is
            torchao's `linear_nf4`, whose autograd function keeps only the weight); litgpt
            (the resource tables' bitsandbytes 0.41.1): 2 and 3.
  dequantised_copies  16-bit copies of a quantised Linear alive while it multiplies:
            `MatMul4Bit` runs `dequantize_4bit(B, state).to(A.dtype)`, a copy in the quant
            state's dtype, then a cast when that differs from the compute dtype. litgpt: 2
            (Lightning 2.1 `BitsandbytesPrecision._Linear4bit._quantize_weight` quantises
            `weight.to(torch.half)`, so the state is fp16, computed in bf16); others 1 (the
            base loaded and computed in the same 16-bit type).
  fused_qkv  one q/k/v projection, so one adapter and one dropout copy for all three
            (lit_gpt/lora.py `LoRAQKVLinear`, Megatron's linear_qkv); PEFT on transformers'
            Llama and torchtune adapt q_proj, k_proj and v_proj one by one.
  adapter_input_copies  hf: PEFT keeps its adapters in fp32 (`autocast_adapter_dtype`, the
            default since 0.12); `Linear.forward` casts x to fp32 (`_cast_input_dtype`) and
            under the Trainer's bf16 autocast A's matmul gets a fresh 16-bit copy per adapter,
            which it keeps: one copy per adapted module, with or without dropout.
  qkv_view_kept, adapter_scatter_kept  litgpt (lit_gpt/model.py @8641822
            `CausalSelfAttention.forward`): v handed to attention is a view of the fused q/k/v
            output, so attention's saved v keeps all of that output alive (the roped q and k
            are new tensors); `LoRAQKVLinear.zero_pad` scatters the adapters' outputs with
            `index_copy`, whose derivative (PyTorch tools/autograd/derivatives.yaml,
            `source: ... expand_as(source)`) saves its source, the adapted widths.

Kernel launches: eager stacks launch about 70 kernels per layer forward (the ops above, the
separate q, k, v projections and, with PEFT, four per adapted Linear) where a fused layer
launches about 16 (`layerwork.KERNELS_FWD`); each costs the same gap on the GPU timeline.
The count of 70 is an estimate from the listed ops, not a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusolve.estimate.shapes import Arch


@dataclass(frozen=True)
class Stack:
    """What one software stack adds to the fused reference (bytes at 16-bit activations)."""

    name: str
    norm_stream_bytes: float  # per element of each norm, beyond the fused 4
    rope_stream_bytes: float  # per element of q and k
    swiglu_stream_bytes: float  # per element of the MLP width, beyond the fused 6
    adapter_stream_bytes: float  # per output element of each adapted Linear
    norm_saved_bytes: float  # kept per element of each norm input, beyond the fused 2
    swiglu_saved_bytes: float  # kept per element of the MLP width, beyond the fused 6
    loss_bytes_per_logit: float  # kept at the loss per logit (fused: one fp32 copy, 4)
    upcast_unquantised: bool  # QLoRA: 16-bit parameters cast to fp32
    adapter_bytes: tuple[float, float, float]  # adapter weights, gradients, moment elements
    kernels_fwd: int  # launches per layer forward
    # What the backward pass keeps of a frozen base (frozenbase.py reads these):
    quantised_input_bytes: tuple[float, float] = (0.0, 2.0)  # per input element: 4-bit, 8-bit
    fused_qkv: bool = False  # one q/k/v projection, so one adapter (and dropout) for all three
    qkv_view_kept: bool = False  # v a view of the fused q/k/v output: all of it stays
    adapter_scatter_kept: bool = False  # the q/k/v adapters' outputs scattered by index_copy
    adapter_input_copies: bool = False  # each adapter casts its input to a copy it keeps
    dequantised_copies: int = 1  # 16-bit copies of a quantised Linear alive in its GEMM


FUSED_LOSS_BYTES_PER_LOGIT = 4.0

_FUSED = Stack("megatron", 0, 0, 0, 0, 0, 0, FUSED_LOSS_BYTES_PER_LOGIT, False, (4, 4, 4), 16)
_LITGPT = Stack(
    "litgpt", 10, 24, 4, 10, 0, 2, 4.0, False, (2, 2, 2), 70, (2.0, 3.0), dequantised_copies=2
)
STACK_TABLE: dict[str, Stack] = {
    s.name: s
    for s in (
        replace(_FUSED, fused_qkv=True),
        Stack("hf", 32, 24, 4, 10, 2, 2, 12.0, True, (4, 4, 4), 70, adapter_input_copies=True),
        Stack("torchtune", 0, 0, 0, 0, 0, 0, 3.0, False, (2, 2, 2), 16),
        replace(_LITGPT, fused_qkv=True, qkv_view_kept=True, adapter_scatter_kept=True),
    )
}

MEGATRON = STACK_TABLE["megatron"]


def stack_named(name: str) -> Stack:
    return STACK_TABLE[name]


def default_stack(kind: str) -> str:
    """What a run uses when the workload does not say: pretraining on Megatron-class fused
    stacks, fine-tunes (full, LoRA, QLoRA) on Hugging Face Trainer, the stack the fine-tuning
    frameworks teams use build on (LLaMA-Factory, Qwen's and Llama's own recipes)."""
    return "megatron" if kind == "pretrain" else "hf"


def eager_stream_bytes_per_token(
    arch: Arch, stack: Stack, *, tp: int, adapted_share: float, act_bytes: float
) -> float:
    """One layer's forward bytes per token that `stack` streams beyond the fused reference.
    `adapted_share` is the adapters' share of an all-Linear LoRA (0 without adapters)."""
    t = max(1, tp)
    scale = act_bytes / 2
    width = (
        arch.ffn
        if not arch.is_moe
        else (arch.active_experts + arch.shared_experts) * (arch.expert_width)
    )
    qk = (arch.heads + arch.kv_heads) * arch.head_dim
    out_widths = (arch.heads + 2 * arch.kv_heads) * arch.head_dim + 2 * arch.hidden
    out_widths += (2 if arch.gated_ffn else 1) * width
    per = 2 * stack.norm_stream_bytes * arch.hidden
    per += stack.rope_stream_bytes * qk / t
    per += stack.swiglu_stream_bytes * width / t if arch.gated_ffn else 0.0
    per += stack.adapter_stream_bytes * adapted_share * out_widths / t
    return per * scale


def eager_saved_bytes_per_token(arch: Arch, stack: Stack, *, tp: int, act_bytes: float) -> float:
    """One layer's stored activations per token beyond the fused inventory (no recompute)."""
    width = (
        arch.ffn
        if not arch.is_moe
        else (arch.active_experts + arch.shared_experts) * (arch.expert_width)
    )
    per = 2 * stack.norm_saved_bytes * arch.hidden
    per += stack.swiglu_saved_bytes * width / max(1, tp) if arch.gated_ffn else 0.0
    if stack.qkv_view_kept and arch.kv_heads == arch.heads and not arch.is_mla:
        # Without grouped queries v stays a view of the fused output (with them k and v are
        # expanded and copied): the q and k parts stay beside the roped copies attention keeps.
        per += 2 * (arch.heads + arch.kv_heads) * arch.head_dim / max(1, tp)
    return per * act_bytes / 2
