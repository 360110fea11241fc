"""What a layer keeps over a frozen base (estimate/frozenbase.py), by hand from the libraries.

Llama-2-7B: h 4096, 32 heads of 128 (no grouped queries), SwiGLU f 11,008. Each expected figure
is a list of tensors read off the code frozenbase.py and stacks.py cite, 2-byte activations.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpusolve.estimate import resolve_arch
from gpusolve.estimate.activations import layer_activation_bytes, stored_tensors
from gpusolve.estimate.frozenbase import ALL_TARGETS, frozen_base_of
from gpusolve.estimate.memory import NO_SAVINGS, Parallel, lora_params, training_states
from gpusolve.estimate.stacks import eager_saved_bytes_per_token, stack_named
from gpusolve.estimate.trainshape import frozen_base_for
from gpusolve.models.requirements import FineTuneWorkload, ModelShape, make_workload
from gpusolve.render.launch.deepspeed import adapter_config
from gpusolve.render.launch.models import model_of

H, F = 4096, 11008
LLAMA2_7B = resolve_arch(ModelShape(preset="llama-2-7b"))


def _litgpt_layer(base_format: str) -> float:
    """LitGPT's lora.py defaults (q and v, dropout 0.05, r 8) per token, flash attention."""
    stack = stack_named("litgpt")
    fb = frozen_base_of(
        stack, base_format=base_format, rank=8, targets=frozenset({"q", "v"}), dropout=0.05
    )
    extra = eager_saved_bytes_per_token(LLAMA2_7B, stack, tp=1, act_bytes=2)
    return layer_activation_bytes(
        LLAMA2_7B,
        moe_layer=False,
        seq=1,
        micro_batch=1,
        tp=1,
        sequence_parallel=False,
        checkpointing="none",
        flash_attention=True,
        act_bytes=2,
        dropout=False,
        savings=NO_SAVINGS,
        extra_per_token=extra,
        frozen=fb,
    )


def test_litgpt_lora_layer_keeps_what_its_code_saves() -> None:
    # Two RMSNorm inputs (x*x and x*rsqrt keep x): 2 x 2h. The fused q/k/v adapter's dropout
    # copy (2h) and bool mask (h) and A's rank-8 output (16 B); the frozen q/k/v and MLP
    # Linears keep nothing. Attention: roped q and k (2h each) and v, kept as a view of the
    # fused output, so its q and k parts too (2h + 4h); the output (2h). index_copy of
    # zero_pad keeps the q and v adapters' outputs (2 x 2h). SwiGLU: silu keeps fc_1's output,
    # the product keeps silu's output and fc_2's output (3 x 2f). The down-projection input:
    # nothing (frozen).
    expected = 4 * H + 3 * H + 16 + (2 * H + 2 * H + 2 * H + 4 * H) + 2 * H + 4 * H + 6 * F
    assert _litgpt_layer("bf16") == pytest.approx(expected)


def test_bitsandbytes_041_keeps_every_quantised_linears_input() -> None:
    # MatMul4Bit (<= 0.43) keeps A: the attention norm's output and the MLP norm's output (one
    # tensor each for q/k/v and for fc_1/fc_2), the product into the down-projection; the
    # O-projection's input is the output flash attention keeps already.
    assert _litgpt_layer("nf4") - _litgpt_layer("bf16") == pytest.approx(2 * H + 2 * H + 2 * F)


def test_current_bitsandbytes_4bit_keeps_no_input_but_8bit_does() -> None:
    hf = stack_named("hf")
    kw = dict(rank=16, targets=ALL_TARGETS, dropout=0.0)
    assert frozen_base_of(hf, base_format="nf4", **kw).quantised_input_bytes == 0.0
    assert frozen_base_of(hf, base_format="int8", **kw).quantised_input_bytes == 2.0
    assert frozen_base_of(hf, base_format="bf16", **kw).quantised_input_bytes == 0.0


def test_a_frozen_linear_without_adapter_keeps_no_input() -> None:
    # PEFT adapter on q only, no dropout: A's matmul keeps the attention norm's output (h, 2 B)
    # and its rank-16 output; the MLP's inputs and the down-projection's input stay unkept.
    fb = frozen_base_of(
        stack_named("hf"), base_format="bf16", rank=16, targets=frozenset({"q"}), dropout=0.0
    )
    st = stored_tensors(
        LLAMA2_7B, moe_layer=False, dropout=False, savings=NO_SAVINGS, act_bytes=2, frozen=fb
    )
    assert st.replicated == pytest.approx(2 * 2 * H + 2 * H + 2 * 16)
    assert st.split == pytest.approx(2 * 3 * H + 2 * H + 2 * 2 * F)


def test_full_training_keeps_korthikantis_inventory() -> None:
    full = make_workload(
        name="x", kind="full_finetune", model=ModelShape(preset="llama-2-7b"), tokens=1e9
    )
    assert frozen_base_for(full) is None
    st = stored_tensors(LLAMA2_7B, moe_layer=False, dropout=False, savings=NO_SAVINGS, act_bytes=2)
    # Norm inputs and outputs 4 x 2h; q, k, v 3 x 2h, attention output 2h; gate, up, silu
    # product 3 x 2f (Korthikanti 2022 §4 with SwiGLU widths).
    assert st.replicated + st.split == pytest.approx(8 * H + 6 * H + 2 * H + 6 * F)


def test_adapter_targets_give_litgpts_trainable_count() -> None:
    # LitGPT's resource table: 4,194,304 trainable parameters for Llama 2 7B with r 8 on the
    # query and value projections: 32 layers x 8 x (2 x (4096 + 4096)).
    assert lora_params(LLAMA2_7B, 8, targets=frozenset({"q", "v"})) == 4_194_304


def test_the_saved_tensor_check_says_what_it_lacks(tmp_path: Path) -> None:
    # benchmarks/validation_saved_tensors.py runs LitGPT's code under PyTorch; without a
    # checkout it says so and exits 2 (usage), before importing anything heavy.
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "validation_saved_tensors.py"
    run = subprocess.run(
        [sys.executable, str(script), "--litgpt", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert "no lit_gpt/lora.py" in run.stderr


def test_the_launch_files_adapter_config_runs_what_the_plan_counted() -> None:
    w = make_workload(
        name="x",
        kind="lora",
        model=ModelShape(preset="llama-2-7b"),
        tokens=1e9,
        lora={"rank": 8, "targets": ["q", "v"], "dropout": 0.05},
    )
    assert isinstance(w, FineTuneWorkload)
    config = adapter_config(w, model_of(w))
    assert config["target_modules"] == ["q_proj", "v_proj"]
    assert config["lora_dropout"] == 0.05
    plain = make_workload(name="x", kind="lora", model=ModelShape(preset="llama-2-7b"), tokens=1e9)
    assert isinstance(plain, FineTuneWorkload)
    assert adapter_config(plain, model_of(plain))["target_modules"] == "all-linear"
    assert adapter_config(plain, model_of(plain))["lora_dropout"] == 0.0


def test_peft_fp32_adapters_keep_one_copy_per_adapted_module() -> None:
    # PEFT's fp32 adapters under bf16 autocast: each of q, k, v, o, gate, up and down keeps its
    # own 16-bit copy of its input (2 B per element) and B's matmul its rank-16 output; the
    # attention output is also kept by flash attention. No dropout, all-linear.
    fb = frozen_base_of(
        stack_named("hf"), base_format="bf16", rank=16, targets=ALL_TARGETS, dropout=0.0
    )
    st = stored_tensors(
        LLAMA2_7B, moe_layer=False, dropout=False, savings=NO_SAVINGS, act_bytes=2, frozen=fb
    )
    assert st.replicated == pytest.approx(2 * 2 * H + 3 * 2 * H + 2 * 2 * H + 5 * 2 * 16)
    assert st.split == pytest.approx(6 * H + 2 * H + 2 * H + 2 * F + 2 * 2 * 16 + 4 * F)


def test_lightnings_fp16_quant_state_doubles_the_dequantised_copy() -> None:
    # The largest Linear of Llama-2-7B in LitGPT is the fused q/k/v, 4096 x 12288. Dequantised
    # to the state's fp16 and cast to the bf16 compute type, two 2-byte copies are alive
    # (Lightning 2.1 quantises `weight.to(torch.half)`); transformers loads and computes the
    # base in one type, one copy.
    def buffer(stack: str) -> float:
        states = training_states(
            LLAMA2_7B,
            kind="qlora",
            precision="bf16",
            optimizer="adamw",
            convention=16,
            par=Parallel(),
            stack=stack_named(stack),
        )
        return states.gathered_weights_bytes

    assert buffer("hf") == pytest.approx(2 * 4096 * 12288)
    assert buffer("litgpt") == pytest.approx(2 * 2 * 4096 * 12288)
