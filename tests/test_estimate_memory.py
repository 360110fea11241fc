"""Memory per GPU against published figures: ZeRO, H05/H27, vLLM, Korthikanti, QLoRA."""

from __future__ import annotations

import pytest
from tests.factories.hardware import A100_80, H100, hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch
from gpusolve.estimate.activations import (
    activation_bytes_per_layer,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
)
from gpusolve.estimate.memory import (
    QUANT_CONSTANT_BITS,
    StateBytes,
    full_training_state_bytes,
    lora_params,
    model_states_bytes,
)
from gpusolve.estimate.presets import PRESETS
from gpusolve.models.params import Params
from gpusolve.models.requirements import Lora, ModelShape, make_workload

GB = 1e9


# --------------------------------------------------------------------------- ZeRO


@pytest.mark.parametrize(
    ("sharding", "expected_gb"),
    [("ddp", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9)],
)
def test_zero_paper_figure_1(sharding: str, expected_gb: float) -> None:
    # Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
    # Parameter Models", Figure 1: Ψ = 7.5B, K = 12, Nd = 64, model states per device:
    # baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB.
    # The figure prints one decimal: 1.9 GB is (2 + 2 + K)·Ψ/Nd = 1.875 GB rounded, 1.3% off,
    # so the tolerance is ±1% or half the printed precision (0.05 GB), whichever is larger.
    per_param = StateBytes(weights=2, gradients=2, optimizer=12)  # K = 12
    states = model_states_bytes(7.5e9, per_param, sharding=sharding, dp=64)
    got = states.total_bytes / GB
    assert abs(got - expected_gb) <= max(0.01 * expected_gb, 0.05)
    exact = {"ddp": 16 * 7.5, "zero1": 4 * 7.5 + 12 * 7.5 / 64, "zero2": 2 * 7.5 + 14 * 7.5 / 64}
    assert got == pytest.approx(exact.get(sharding, 16 * 7.5 / 64))


def test_fsdp_full_shards_like_zero3() -> None:
    per = StateBytes(2, 2, 12)
    a = model_states_bytes(7.5e9, per, sharding="zero3", dp=64)
    b = model_states_bytes(7.5e9, per, sharding="fsdp_full", dp=64)
    assert a == b
    # FSDP hybrid shards inside an 8-GPU node only: 16 B/param / 8.
    c = model_states_bytes(7.5e9, per, sharding="fsdp_hybrid", dp=64, shard_group=8)
    assert c.total_bytes == pytest.approx(7.5e9 * 16 / 8)


# --------------------------------------------------------------------------- H05, H28


def test_7b_mixed_precision_adamw_is_112_gb_and_126_with_18_byte_convention() -> None:
    # H05: "a 7B model needs ≥ 112 GB" = 7e9 × 16 B (2 weights + 2 grads + 12 Adam state).
    # The 18-byte convention keeps fp32 gradients (Megatron-LM, Hugging Face): 126 GB.
    assert 7e9 * full_training_state_bytes("bf16", "adamw", 16).total / GB == 112.0
    assert 7e9 * full_training_state_bytes("bf16", "adamw", 18).total / GB == 126.0


def test_convention_parameter_reaches_evaluate() -> None:
    w = make_workload(name="ft", kind="full_finetune", model=ModelShape(params_b=7), tokens=1e9)
    lay = Layout(nodes=1, tp=1, pp=1, dp=1)
    m16 = evaluate(w, hgx(A100_80), lay, Params(bytes_per_param_convention=16)).memory
    m18 = evaluate(w, hgx(A100_80), lay, Params()).memory  # default: fp32 gradient buffer
    assert (m16.weights_bytes + m16.gradients_bytes + m16.optimizer_bytes) / GB == pytest.approx(
        112.0
    )
    assert (m18.weights_bytes + m18.gradients_bytes + m18.optimizer_bytes) / GB == pytest.approx(
        126.0
    )


def test_optimizer_state_per_parameter() -> None:
    # H28: AdamW optimizer state for 7B is 7B × 4 bytes × 2 = 56 GB (moments, the document's
    # arithmetic corrected), plus the fp32 master copy (28 GB) in mixed precision.
    assert 7e9 * (full_training_state_bytes("fp32", "adamw").optimizer) / GB == 56.0
    assert 7e9 * (full_training_state_bytes("bf16", "adamw").optimizer) / GB == 84.0
    # fp32 AdamW: 4 + 4 + 8 = 16 B/param; 8-bit Adam: 2 + 2 + (4 + 2); SGD momentum 4.
    assert full_training_state_bytes("bf16", "adamw_fp32").total == 16.0
    assert full_training_state_bytes("bf16", "adam_8bit").total == 10.0
    assert full_training_state_bytes("fp32", "sgd_momentum").total == 12.0
    # H39: FP32 weights double FP16/BF16 weights.
    assert full_training_state_bytes("fp32", "adamw").weights == 2 * 2.0


# --------------------------------------------------------------------------- inference


def test_13b_fp16_inference_weights_are_26_gb() -> None:
    # H27: "13B in FP16 is ≈ 26 GB of weights".
    w = make_workload(
        name="chat",
        kind="inference",
        precision="fp16",
        model=ModelShape(params_b=13),
        context_len=2048,
        concurrency=1,
    )
    est = evaluate(w, hgx(A100_80), Layout(nodes=1, tp=1, pp=1, dp=1), Params())
    assert est.memory.weights_bytes / GB == pytest.approx(26.0)
    assert est.memory.gradients_bytes == est.memory.optimizer_bytes == 0
    # The CUDA context and kernels, plus the engine's CUDA graphs (1 GiB, engines.py).
    graphs_gb = 2**30 / GB
    assert est.memory.overhead_bytes / GB == pytest.approx(Params().runtime_overhead_gb + graphs_gb)


def test_opt_13b_kv_cache_is_819200_bytes_per_token() -> None:
    # Kwon et al. 2023 (vLLM, "Efficient Memory Management for LLM Serving with
    # PagedAttention", §3): OPT-13B's KV cache is 2 (K, V) × 5120 (hidden) × 40 (layers)
    # × 2 bytes = 800 KB = 819,200 bytes per token.
    arch = resolve_arch(ModelShape(preset="opt-13b"))
    assert kv_cache_bytes_per_token(arch, 2.0) == 819_200
    assert kv_cache_bytes(arch, context=2048, batch=1, kv_bytes=2.0) == 819_200 * 2048


def test_gqa_shrinks_the_kv_cache_and_tp_splits_it() -> None:
    # Llama 2 70B keeps 8 KV heads of 64: 2 · 80 · 8 · 128 · 2 = 327,680 bytes per token.
    arch = resolve_arch(ModelShape(preset="llama-2-70b"))
    assert kv_cache_bytes_per_token(arch, 2.0) == 327_680
    one = kv_cache_bytes(arch, context=4096, batch=8, kv_bytes=2.0, tp=1)
    assert kv_cache_bytes(arch, context=4096, batch=8, kv_bytes=2.0, tp=8) == one / 8
    # TP beyond the KV heads replicates them (vLLM): 16-way TP still holds 1 head per GPU.
    assert kv_cache_bytes(arch, context=4096, batch=8, kv_bytes=2.0, tp=16) == one / 8


# --------------------------------------------------------------------------- activations


def test_korthikanti_gpt3_attention_term_and_selective_saving() -> None:
    # Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
    # Models", §4 / Table 2: for GPT-3 175B (a = 96, h = 12288, s = 2048) 5as/h = 80, so
    # selective recomputation (34 instead of 34 + 80) saves 70% of activation memory.
    arch = resolve_arch(ModelShape(preset="gpt-3-175b"))
    assert 5 * arch.heads * 2048 / arch.hidden == 80
    kw = {"seq": 2048, "micro_batch": 1, "hidden": arch.hidden, "heads": arch.heads}
    none = activation_bytes_per_layer(**kw)
    selective = activation_bytes_per_layer(**kw, checkpointing="selective")
    full = activation_bytes_per_layer(**kw, checkpointing="full")
    assert 1 - selective / none == pytest.approx(0.70, abs=0.005)
    assert none == 2048 * 12288 * (34 + 80)  # s·b·h·(34 + 5as/h)
    assert full == 2 * 2048 * 12288  # 2·s·b·h
    # Flash attention never stores the scores: 34·s·b·h, like selective recomputation.
    assert activation_bytes_per_layer(**kw, flash_attention=True) == selective


def test_korthikanti_tensor_and_sequence_parallel_forms() -> None:
    s, h, a, t = 2048, 12288, 96, 8
    kw = {"seq": s, "micro_batch": 1, "hidden": h, "heads": a, "tp": t}
    sbh = s * h
    # TP without SP: s·b·h·(10 + 24/t + 5as/(ht)).
    assert activation_bytes_per_layer(**kw, sequence_parallel=False) == pytest.approx(
        sbh * (10 + 24 / t + 80 / t)
    )
    # TP with SP: s·b·h·(34 + 5as/h)/t; selective with SP: 34·s·b·h/t.
    assert activation_bytes_per_layer(**kw) == pytest.approx(sbh * (34 + 80) / t)
    assert activation_bytes_per_layer(**kw, checkpointing="selective") == pytest.approx(
        sbh * 34 / t
    )


def test_micro_batch_scales_activations_and_accumulation_does_not() -> None:
    w = make_workload(
        name="ft", kind="full_finetune", model=ModelShape(preset="llama-2-7b"), tokens=1e9
    )
    hw, p = hgx(H100), Params()
    one = evaluate(w, hw, Layout(1, 1, 1, 8, "zero3", micro_batch=1, grad_accum=1), p)
    two = evaluate(w, hw, Layout(1, 1, 1, 8, "zero3", micro_batch=2, grad_accum=1), p)
    acc = evaluate(w, hw, Layout(1, 1, 1, 8, "zero3", micro_batch=1, grad_accum=8), p)
    assert two.memory.activations_bytes == pytest.approx(2 * one.memory.activations_bytes)
    assert acc.memory.activations_bytes == one.memory.activations_bytes


# --------------------------------------------------------------------------- LoRA / QLoRA


def test_lora_keeps_a_frozen_base_and_trains_small_fp32_adapters() -> None:
    arch = resolve_arch(ModelShape(preset="llama-2-7b"))
    adapters = lora_params(arch, 16)
    # H14: LoRA cuts trainable parameters to about 1% or 0.1%.
    assert 0.001 < adapters / arch.params < 0.01
    w = make_workload(
        name="lora",
        kind="lora",
        model=ModelShape(preset="llama-2-7b"),
        tokens=1e8,
        lora=Lora(rank=16),
    )
    est = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1), Params())
    assert est.memory.weights_bytes == pytest.approx(arch.params * 2 + adapters * 4)
    assert est.memory.gradients_bytes == pytest.approx(adapters * 4)
    assert est.memory.optimizer_bytes == pytest.approx(adapters * 8)
    # Frozen base: 4·N·D over the non-embedding parameters, plus attention's 12·L·s·h·D.
    attention = 12 * arch.layers * w.seq_len * arch.hidden
    per_token = 4 * (arch.params - arch.input_embedding_params) + attention
    assert est.model_flops == pytest.approx(per_token * 1e8)


def test_qlora_base_is_4_bit_with_quantisation_constants() -> None:
    # Dettmers et al. 2023 (QLoRA, §3): NF4 with double quantisation costs
    # 8/64 + 32/(64·256) = 0.127 bit per parameter on top of the 4 bits.
    assert QUANT_CONSTANT_BITS["nf4"] == pytest.approx(0.127, abs=0.0005)
    arch = resolve_arch(ModelShape(preset="llama-2-7b"))
    model = ModelShape(preset="llama-2-7b")
    w = make_workload(name="q", kind="qlora", model=model, tokens=1e8, framework="megatron")
    est = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1), Params())
    adapters = lora_params(arch, 16)
    linear = arch.params - arch.embedding_params
    base = linear * (4 + 0.127) / 8 + arch.embedding_params * 2  # embeddings stay 16-bit
    assert est.memory.weights_bytes == pytest.approx(base + adapters * 4, rel=1e-3)
    assert est.memory.weights_bytes / GB < 5  # a 7B base in about 4 GB
    # Hugging Face + PEFT: prepare_model_for_kbit_training casts the 16-bit parameters
    # (embeddings, output layer) to fp32, two more bytes each.
    hf = make_workload(name="q", kind="qlora", model=model, tokens=1e8, framework="hf")
    est_hf = evaluate(hf, hgx(A100_80), Layout(1, 1, 1, 1), Params())
    assert est_hf.memory.weights_bytes - est.memory.weights_bytes == pytest.approx(
        arch.embedding_params * 2, rel=1e-3
    )


def test_dequantised_copy_of_the_largest_linear_sits_beside_a_4_bit_base() -> None:
    # bitsandbytes' MatMul4Bit dequantises one weight to 16 bits for its GEMM: Llama-2-7B's
    # largest Linear is the fused QKV (4096 x 12288) or one MLP projection (4096 x 11008).
    model = ModelShape(preset="llama-2-7b")
    w = make_workload(name="q", kind="qlora", model=model, tokens=1e8, framework="megatron")
    est = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1), Params())
    assert est.memory.gathered_weights_bytes == pytest.approx(2 * 4096 * 12288)


def test_full_recomputation_holds_one_unrecomputed_layer_in_backward() -> None:
    # torch.utils.checkpoint reruns one layer's forward inside the backward pass: that
    # layer's whole activations sit beside every other layer's kept input.
    model = ModelShape(preset="llama-2-7b")
    w = make_workload(name="f", kind="pretrain", model=model, tokens=1e8, seq_len=2048)
    full = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1, checkpointing="full"), Params())
    none = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1, checkpointing="none"), Params())
    arch = resolve_arch(model)
    tokens = 2048
    kept_inputs = arch.layers * 2 * tokens * arch.hidden
    head = tokens * 4 * (arch.hidden + arch.vocab)  # Korthikanti §4.2's output layer
    one_layer = (none.memory.activations_bytes - head) / arch.layers
    working = one_layer - 2 * tokens * arch.hidden  # its own kept input is already counted
    assert full.memory.activations_bytes == pytest.approx(kept_inputs + working + head)


# --------------------------------------------------------------------------- MoE


def test_moe_total_versus_active_parameters_and_expert_parallel() -> None:
    # Mixtral 8x7B model card: 46.7B parameters, 12.9B used per token.
    arch = resolve_arch(ModelShape(preset="mixtral-8x7b"))
    assert arch.params / 1e9 == pytest.approx(46.7, rel=0.01)
    assert arch.active_params / 1e9 == pytest.approx(12.9, rel=0.01)
    w = make_workload(
        name="moe", kind="pretrain", model=ModelShape(preset="mixtral-8x7b"), tokens=1e9
    )
    p, hw = Params(), hgx(H100)
    no_ep = evaluate(w, hw, Layout(1, 1, 1, 8, "zero1"), p)
    ep8 = evaluate(w, hw, Layout(1, 1, 1, 8, "zero1", ep=8), p)
    assert ep8.memory.weights_bytes < no_ep.memory.weights_bytes / 4
    attention = 12 * arch.layers * w.seq_len * arch.hidden
    per_token = 6 * (arch.active_params - arch.input_embedding_params) + attention
    assert no_ep.model_flops == pytest.approx(per_token * 1e9)


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_shapes_reproduce_published_sizes(preset: str) -> None:
    # Each preset cites its config; the count from the shape must match the model card.
    p = PRESETS[preset]
    arch = resolve_arch(ModelShape(preset=preset))
    assert arch.params / 1e9 == pytest.approx(p.published_params_b, rel=0.02)
    assert not arch.coarse
    assert p.source


def test_preset_names_are_forgiving_and_unknown_names_fail() -> None:
    assert resolve_arch(ModelShape(preset="Llama 2 70B")).layers == 80
    assert resolve_arch(ModelShape(preset="meta-llama/Llama-2-7b-hf")).hidden == 4096
    with pytest.raises(ValueError, match="known presets"):
        resolve_arch(ModelShape(preset="llama-9-1t"))


def test_params_only_is_coarse_and_says_so() -> None:
    arch = resolve_arch(ModelShape(params_b=7))
    assert arch.coarse
    assert "coarse" in arch.convention
    assert arch.params == 7e9
    # The derived shape is plausible: Llama 2 7B is 32 × 4096.
    assert 28 <= arch.layers <= 36
    assert 3584 <= arch.hidden <= 4608


def test_architecture_without_heads_fills_stated_defaults() -> None:
    arch = resolve_arch(ModelShape(layers=32, hidden=4096))
    assert not arch.coarse
    assert arch.heads == 32
    assert any("heads" in a for a in arch.assumptions)
    assert arch.params / 1e9 == pytest.approx(6.7, rel=0.05)  # 12·L·h² + embeddings


def test_params_b_overrides_a_preset_count() -> None:
    arch = resolve_arch(ModelShape(preset="llama-2-7b", params_b=7))
    assert arch.params == 7e9
    assert arch.layers == 32


def test_deepspeed_bf16_optimizer_keeps_bf16_and_fp32_gradients_unsharded() -> None:
    # DeepSpeed's BF16_Optimizer under ZeRO-1: bf16 weights 2 + bf16 gradients 2 + fp32
    # accumulation buffer 4 on every rank, fp32 master and AdamW moments 12 sharded over d:
    # 8 + 12/d bytes per parameter. Megatron's fp32 main gradients (18): 6 + 12/d.
    model = ModelShape(preset="llama-2-7b")
    arch = resolve_arch(model)
    w = make_workload(name="f", kind="full_finetune", model=model, tokens=1e8)
    layout = Layout(1, 1, 1, 8, "zero1")
    for convention, per_rank in ((20, 8.0), (18, 6.0), (16, 4.0)):
        m = evaluate(w, hgx(A100_80), layout, Params(bytes_per_param_convention=convention))
        states = m.memory.weights_bytes + m.memory.gradients_bytes + m.memory.optimizer_bytes
        assert states == pytest.approx(arch.params * (per_rank + 12 / 8), rel=1e-6), convention
