"""Published results the physics is validated against: inputs as published, the figure, a
tolerance. `tests/test_validation.py` fails when any case leaves its tolerance;
`python benchmarks/validation.py` prints the residual table (and `--fit` the one fitted
parameter, `efficiency.FIT_GEMM_SHAPES`, swept over this set alone).

Each case builds its workload, hardware, layout and parameters through the public API
(`evaluate`), so a case exercises exactly what `gpusolve plan` and `estimate` run.

Sources (primary unless marked):
  NARAYANAN  Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
             Clusters Using Megatron-LM" (SC'21, arXiv:2104.04473), Table 1; micro-batch sizes,
             interleaving and the DDP implementation from the authors' reproduction script
             NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (commit de7dc40f, 2021-08-10):
             fp16, full recomputation, s = 2048, V = 51,200, Selene DGX A100 80GB with 8 x
             200 Gb/s HDR per node. Rows 1.7B-18B use PyTorch DDP (buckets overlap the last
             micro-batch's backward), the rest Megatron's local DDP (all-reduce after backward).
             TFLOP/s counts Eq. (3), 96·B·s·l·h²·(1 + s/6h + V/16lh), recomputation included.
  KORTHIKANTI Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
             Models" (arXiv:2205.05198), Table 3 (configurations), Table 5 (iteration time, full
             recomputation vs selective + sequence parallelism); §5: backward TP all-reduces
             overlap the weight-gradient GEMMs; §6.3: no overlap of gradient all-reduces;
             Figure 1's memory per GPU as Calculon transcribes it (calculon-ai/calculon
             @caa4b11, calculon/llm/validation.py, seqsel_fig1).
  ZERO       Rajbhandari et al. 2020, "ZeRO" (arXiv:1910.02054), Table 1: model-state memory
             per device, K = 12, decimal GB, printed truncated.
  VLLM       Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving
             with PagedAttention" (arXiv:2309.06180), §3 (800 KB per OPT-13B token) and Table 1
             (parameter size, memory for the KV cache, max KV slots).
  GPTFAST    pytorch-labs/gpt-fast README (commit 0f925b5): batch-1 decode on 8 x A100-80GB
             (power-limited to 330 W), 5-token prompt, tokens/s per user.

Cross-checks (`gated=False`, in the table, never fitted, not asserted: each publication leaves
part of its layout out, and `assumption` says what the case fills in):
  MEGATRON_H100  NVIDIA/Megatron-LM README (2024, commit f2e5db40), H100 weak scaling:
             seq 4096, vocab 131,072, DP/TP/PP overlap on; micro-batch not published.
  LLAMA3     Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783), Table 4.
  FRONTIER   LLaMA-65B (Touvron et al. 2023 §2.4: 380 tokens/s/GPU on 2,048 A100-80GB),
             DeepSeek-V3 (arXiv:2412.19437 §3.2: 2,048 H800, PP16, EP64, ZeRO-1; 180K
             GPU-hours per trillion tokens).
  Serving at load (TensorRT-LLM perf-overview, NIM benchmarks): tests/support/
             validation_serving.py.
  NEMO       NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb,
             container NeMo 24.07, DGX-H100, FP8): tokens/s per GPU with TP/PP/CP/VP,
             micro-batch and global batch as published. The Llama pretraining rows are
             fitted on (Hopper's GEMM_SHAPES); its GPT-3 rows are gated and held out; its
             fine-tuning rows are cross-checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpusolve.estimate import Hardware, Layout, evaluate, resolve_arch
from gpusolve.estimate.activations import kv_cache_bytes, kv_cache_bytes_per_token
from gpusolve.estimate.memory import weights_bytes
from gpusolve.models.catalog import Card
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, Workload, make_workload

ROOT = Path(__file__).resolve().parents[2]
GB = 1e9
GIB = 2**30


def shipped_card(card_id: str) -> Card:
    doc = yaml.safe_load((ROOT / "catalog" / "cards.yaml").read_text())
    return Card.model_validate(next(c for c in doc["cards"] if c["id"] == card_id))


def _hgx(card_id: str, nvlink_gbs: float, nic_gbps: float, fabric: str = "infiniband") -> Hardware:
    return Hardware(
        card=shipped_card(card_id),
        gpus_per_node=8,
        intra_node_bandwidth_gbs=nvlink_gbs,
        inter_node_gbps_per_gpu=nic_gbps,
        storage_write_gbs=100,
        label=f"hgx-{card_id}",
        topology="nvswitch",
        fabric=fabric,
    )


def dgx_a100() -> Hardware:
    """Selene's DGX A100 80GB: 8 GPUs on NVSwitch (600 GB/s), 8 x 200 Gb/s HDR per node."""
    return _hgx("a100-80gb-sxm", 600, 200)


@dataclass(frozen=True)
class Case:
    """One published figure and how to reproduce it."""

    group: str
    name: str
    citation: str
    published: float
    unit: str
    tolerance: float  # relative
    fitted_on: bool  # part of the set FIT_GEMM_SHAPES is fitted on
    run: Any = field(repr=False, compare=False)  # () -> predicted value
    gated: bool = True  # False: a cross-check reported in the table, not asserted
    assumption: str = ""  # what the publication leaves out and the case assumes
    family: str = "ampere"  # the card family whose GEMM_SHAPES a fitted case fits

    def predict(self) -> float:
        return float(self.run())

    def residual(self) -> float:
        return self.predict() / self.published - 1.0


# --------------------------------------------------------------------------- training


def _gpt(hidden: int, heads: int, layers: int, vocab: int = 51200) -> ModelShape:
    """Megatron's GPT: 4h GeLU MLP, tied embeddings."""
    return ModelShape(layers=layers, hidden=hidden, heads=heads, vocab=vocab, tied_embeddings=True)


def _megatron_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int, hw: float) -> float:
    """Narayanan Eq. (3) (hw = 96, recomputation counted) or Korthikanti Eq. (7) (hw = 72)."""
    head = vocab / ((16 if hw == 96 else 12) * layers * hidden)
    return hw * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + head)


def _step_s(w: Workload, layout: Layout, params: Params) -> float:
    est = evaluate(w, dgx_a100(), layout, params)
    assert est.step_time_s is not None
    return est.step_time_s


NARAYANAN_ROWS = (
    # params_b, heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s, micro-batch, chunks, torch DDP
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1, True),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1, True),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1, True),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1, True),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1, False),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3, False),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2, False),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2, False),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3, False),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1, False),
)


def _narayanan(row: tuple[Any, ...]) -> Case:
    size, heads, hidden, layers, tp, pp, gpus, batch, tflops, mb, vp, torch_ddp = row
    dp = gpus // (tp * pp)
    w = make_workload(
        name=f"gpt-{size}b",
        kind="pretrain",
        model=_gpt(hidden, heads, layers),
        precision="fp16",
        seq_len=2048,
        micro_batch=mb,
        global_batch=batch,
        gradient_checkpointing="full",
        flash_attention=False,
        dropout=True,
        tokens=float(batch * 2048),
    )
    layout = Layout(
        nodes=gpus // 8,
        tp=tp,
        pp=pp,
        dp=dp,
        sharding="ddp",
        checkpointing="full",
        micro_batch=mb,
        grad_accum=batch // (dp * mb),
        sequence_parallel=False,
        vp=vp,
    )
    # 2021 Megatron: fp16 gradients reduced in fp16 (16 B/param), no TP overlap.
    params = Params(
        bytes_per_param_convention=16, dp_comm_overlap=torch_ddp, tp_comm_overlap="none"
    )
    flops = _megatron_flops(batch, 2048, layers, hidden, 51200, 96)
    return Case(
        group="Narayanan et al. 2021, Table 1",
        name=f"GPT {size}B TP{tp} PP{pp} {gpus} GPUs",
        citation="arXiv:2104.04473 Table 1; examples/sc21/run_table_1.sh",
        published=float(tflops),
        unit="TFLOP/s/GPU",
        tolerance=0.15,
        fitted_on=True,
        run=lambda: flops / (_step_s(w, layout, params) * gpus) / 1e12,
    )


KORTHIKANTI_ROWS = (
    # name, heads, hidden, layers, TP, PP, GPUs, batch, micro-batch, chunks, full s, sel+SP s
    ("22B", 64, 6144, 48, 8, 1, 8, 4, 4, 1, 1.42, 1.10),
    ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 18.13, 13.75),
    ("530B", 128, 20480, 105, 8, 35, 280, 280, 1, 3, 49.05, 37.83),
    ("1T", 160, 25600, 128, 8, 64, 512, 512, 1, 1, 94.42, 71.49),
)


def _korthikanti_workload(
    name: str, heads: int, hidden: int, layers: int, mb: int, batch: int, ckpt: str
) -> Workload:
    return make_workload(
        name=f"gpt-{name.lower()}",
        kind="pretrain",
        model=_gpt(hidden, heads, layers),
        precision="fp16",
        seq_len=2048,
        micro_batch=mb,
        global_batch=batch,
        gradient_checkpointing=ckpt,
        flash_attention=False,
        dropout=True,
        tokens=float(batch * 2048),
    )


def _korthikanti(row: tuple[Any, ...], mode: str) -> Case:
    name, heads, hidden, layers, tp, pp, gpus, batch, mb, vp, t_full, t_sel = row
    ckpt, sp, published = ("full", False, t_full) if mode == "full" else ("selective", True, t_sel)
    w = _korthikanti_workload(name, heads, hidden, layers, mb, batch, ckpt)
    layout = Layout(
        nodes=max(1, gpus // 8),
        tp=tp,
        pp=pp,
        dp=1,
        sharding="ddp",
        checkpointing=ckpt,
        micro_batch=mb,
        grad_accum=batch // mb,
        sequence_parallel=sp,
        vp=vp,
    )
    params = Params(bytes_per_param_convention=18, tp_comm_overlap="backward")
    label = "full recompute" if mode == "full" else "selective + SP"
    return Case(
        group="Korthikanti et al. 2022, Table 5",
        name=f"{name} {label}",
        citation="arXiv:2205.05198 Tables 3 and 5",
        published=published,
        unit="s/iteration",
        tolerance=0.15,
        fitted_on=True,
        run=lambda: _step_s(w, layout, params),
    )


FIGURE1_GIB = {
    # Calculon's transcription of Korthikanti Figure 1: (params+optimizer, activations) GiB
    # per GPU, without recomputation or SP ("none") and with selective + SP ("seqsel").
    "22B": {"none": (45.5625, 59.25), "seqsel": (45.5625, 9.5625)},
    "175B": {"none": (45.5625, 66.84375), "seqsel": (45.5625, 12.3515625)},
    "530B": {"none": (31.640625, 114.0234375), "seqsel": (31.640625, 23.076171875)},
    "1T": {"none": (32.958984375, 131.25), "seqsel": (32.958984375, 26.5625)},
}


def _figure1(row: tuple[Any, ...], mode: str, part: str) -> Case:
    name, heads, hidden, layers, tp, pp, gpus, batch, mb, vp, _, _ = row
    ckpt, sp = ("none", False) if mode == "none" else ("selective", True)
    w = _korthikanti_workload(name, heads, hidden, layers, mb, batch, ckpt)
    layout = Layout(
        nodes=max(1, gpus // 8),
        tp=tp,
        pp=pp,
        dp=1,
        checkpointing=ckpt,
        micro_batch=mb,
        grad_accum=batch // mb,
        sequence_parallel=sp,
        vp=vp,
    )
    params = Params(bytes_per_param_convention=18)
    published = FIGURE1_GIB[name][mode][0 if part == "states" else 1]

    def run() -> float:
        m = evaluate(w, dgx_a100(), layout, params).memory
        if part == "states":
            return (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / GIB
        return m.activations_bytes / GIB

    return Case(
        group="Korthikanti et al. 2022, Figure 1 (memory)",
        name=f"{name} {mode} {part}",
        citation="arXiv:2205.05198 Figure 1, as transcribed in calculon validation.py",
        published=published,
        unit="GiB/GPU",
        tolerance=0.10,
        fitted_on=False,
        run=run,
    )


# --------------------------------------------------------------------------- memory


ZERO_TABLE1 = {
    # model (billions): {DP: (P_os, P_os+g, P_os+g+p)} in decimal GB
    7.5: {
        4: (52.5, 41.3, 30),
        16: (35.6, 21.6, 7.5),
        64: (31.4, 16.6, 1.88),
        256: (30.4, 15.4, 0.47),
        1024: (30.1, 15.1, 0.12),
    },
    128: {
        4: (896, 704, 512),
        16: (608, 368, 128),
        64: (536, 284, 32),
        256: (518, 263, 8),
        1024: (513, 257, 2),
    },
}


def _zero(size: float, dp: int, stage: int) -> Case:
    published = ZERO_TABLE1[size][dp][stage - 1]
    w = make_workload(
        name=f"zero-{size}b",
        kind="pretrain",
        model=ModelShape(params_b=size),
        precision="fp16",
        tokens=1e9,
    )
    layout = Layout(nodes=max(1, dp // 8), tp=1, pp=1, dp=dp, sharding=f"zero{stage}")
    params = Params(bytes_per_param_convention=16)  # the paper's K = 12 with fp16 gradients

    def run() -> float:
        m = evaluate(w, dgx_a100(), layout, params).memory
        return (m.weights_bytes + m.gradients_bytes + m.optimizer_bytes) / GB

    names = {1: "P_os", 2: "P_os+g", 3: "P_os+g+p"}
    return Case(
        group="ZeRO (Rajbhandari et al. 2020), Table 1",
        name=f"{size:g}B DP{dp} {names[stage]}",
        citation="arXiv:1910.02054 Table 1",
        published=float(published),
        unit="GB/GPU",
        # The table prints 3 significant figures, truncated (1.88, 0.47, 0.12).
        tolerance=0.10 if published >= 1 else 0.12,
        fitted_on=False,
        run=run,
    )


def _opt(size: str) -> ModelShape:
    shapes = {
        "13B": ModelShape(preset="opt-13b"),
        # facebook/opt-66b config.json: 64 layers, hidden 9216, 72 heads, ffn 36864.
        "66B": ModelShape(layers=64, hidden=9216, heads=72, vocab=50272, tied_embeddings=True),
        # OPT-175B (Zhang et al. 2022, Table 1): 96 layers, 96 heads, hidden 12288.
        "175B": ModelShape(layers=96, hidden=12288, heads=96, vocab=50272, tied_embeddings=True),
    }
    return shapes[size]


VLLM_TABLE1 = (
    # model, GPUs (TP), parameter size GB, memory for KV cache GB, max KV slots
    ("13B", 1, 26, 12, 15.7e3),
    ("66B", 4, 132, 21, 9.7e3),
    ("175B", 8, 346, 264, 60.1e3),
)


def _vllm_params(size: str, tp: int, published_gb: float) -> Case:
    arch = resolve_arch(_opt(size))
    return Case(
        group="vLLM (Kwon et al. 2023), Table 1",
        name=f"OPT-{size} parameter size",
        citation="arXiv:2309.06180 Table 1",
        published=float(published_gb),
        unit="GB",
        tolerance=0.10,
        fitted_on=False,
        run=lambda: weights_bytes(arch, "fp16") / GB,
    )


def _vllm_slots(size: str, tp: int, kv_gb: float, slots: float) -> Case:
    arch = resolve_arch(_opt(size))

    def run() -> float:
        # KV bytes of one token on one GPU of the TP group; the paper's GB here are GiB.
        per_token_gpu = kv_cache_bytes(arch, context=1, batch=1, kv_bytes=2.0, tp=tp)
        return kv_gb * GIB / (per_token_gpu * tp)

    return Case(
        group="vLLM (Kwon et al. 2023), Table 1",
        name=f"OPT-{size} max KV slots",
        citation="arXiv:2309.06180 Table 1",
        published=slots,
        unit="tokens",
        tolerance=0.10,
        fitted_on=False,
        run=run,
    )


def _vllm_per_token() -> Case:
    arch = resolve_arch(_opt("13B"))
    return Case(
        group="vLLM (Kwon et al. 2023), §3",
        name="OPT-13B KV cache per token",
        citation="arXiv:2309.06180 §3: 2 x 5120 x 40 x 2 bytes = 800 KB",
        published=800.0,
        unit="KiB",
        tolerance=0.01,
        fitted_on=False,
        run=lambda: kv_cache_bytes_per_token(arch, 2.0) / 1024,
    )


# --------------------------------------------------------------------------- decode


GPTFAST_ROWS = (
    # model preset, precision, TP, tokens/s (batch 1)
    ("llama-2-7b", "bf16", 1, 104.9),
    ("llama-2-7b", "int8", 1, 155.58),
    ("llama-2-7b", "bf16", 2, 168.84),
    ("llama-2-7b", "bf16", 4, 254.02),
    ("llama-2-7b", "bf16", 8, 328.43),
    ("llama-2-70b", "bf16", 2, 21.32),
    ("llama-2-70b", "bf16", 4, 38.01),
    ("llama-2-70b", "bf16", 8, 62.50),
    ("llama-2-70b", "int8", 1, 19.13),
)


def _gpt_fast(preset: str, precision: str, tp: int, published: float) -> Case:
    w = make_workload(
        name=f"{preset}-decode",
        kind="inference",
        model=ModelShape(preset=preset),
        precision=precision,  # type: ignore[arg-type]
        prompt_tokens=5,
        output_tokens=200,
        concurrency=1,
    )
    layout = Layout(nodes=1, tp=tp, pp=1, dp=1, micro_batch=1)

    def run() -> float:
        est = evaluate(w, dgx_a100(), layout, Params(headroom=0.0))
        assert est.serving is not None
        return est.serving.single_stream_tokens_per_s

    return Case(
        group="gpt-fast, batch-1 decode on A100-80GB",
        name=f"{preset} {precision} TP{tp}",
        citation="pytorch-labs/gpt-fast README (commit 0f925b5)",
        published=published,
        unit="tokens/s",
        tolerance=0.20,
        fitted_on=False,
        run=run,
    )


# --------------------------------------------------------------------------- cross-checks


MEGATRON_H100_ROWS = (
    # params_b, heads, hidden, layers, TP, PP, DP, batch, TFLOP/s per GPU
    (1.7, 16, 2048, 24, 1, 1, 48, 192, 408.8),
    (7.1, 32, 4096, 30, 2, 1, 48, 192, 465.9),
    (16, 48, 6144, 32, 4, 1, 48, 192, 489.1),
    (32, 56, 7168, 48, 8, 1, 48, 192, 459.6),
    (70, 64, 8192, 84, 8, 2, 48, 384, 419.7),
    (119, 80, 10240, 92, 8, 4, 48, 768, 420.5),
    (177, 96, 12288, 96, 8, 6, 48, 1152, 432.8),
    (314, 128, 16384, 96, 8, 8, 48, 1536, 474.4),
    (462, 144, 18432, 112, 8, 16, 48, 3072, 459.9),
)


def _megatron_h100(row: tuple[Any, ...]) -> Case:
    size, heads, hidden, layers, tp, pp, dp, batch, tflops = row
    gpus = tp * pp * dp
    m = batch // dp
    w = make_workload(
        name=f"gpt-{size}b",
        kind="pretrain",
        model=_gpt(hidden, heads, layers, vocab=131072).model_copy(
            update={"tied_embeddings": False}
        ),
        seq_len=4096,
        micro_batch=1,
        global_batch=batch,
        tokens=float(batch * 4096),
    )
    layout = Layout(
        nodes=gpus // 8, tp=tp, pp=pp, dp=dp, sharding="zero1", micro_batch=1, grad_accum=m
    )
    params = Params(tp_comm_overlap="full")
    flops = _megatron_flops(batch, 4096, layers, hidden, 131072, 72)
    hw = _hgx("h100-sxm", 900, 400)

    def run() -> float:
        est = evaluate(w, hw, layout, params)
        assert est.step_time_s is not None
        return flops / (est.step_time_s * gpus) / 1e12

    return Case(
        group="Megatron-LM README 2024, H100 weak scaling (cross-check)",
        name=f"GPT {size}B TP{tp} PP{pp} DP{dp}",
        citation="NVIDIA/Megatron-LM README @f2e5db40, images/model_table.png",
        published=float(tflops),
        unit="TFLOP/s/GPU",
        tolerance=0.15,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="micro-batch 1, distributed optimizer, no interleaving, TP overlap full",
        family="hopper",
    )


def _llama3(gpus: int, dp: int, per_dp: int, tflops: float) -> Case:
    w = make_workload(
        name="llama3-405b",
        kind="pretrain",
        model=ModelShape(preset="llama-3.1-405b"),
        seq_len=8192,
        micro_batch=1,
        global_batch=dp * per_dp,
        tokens=float(dp * per_dp * 8192),
    )
    layout = Layout(
        nodes=gpus // 8,
        tp=8,
        pp=16,
        dp=dp,
        sharding="zero1",
        micro_batch=1,
        grad_accum=per_dp,
        vp=4,
    )
    hw = _hgx("h100-sxm", 900, 400, fabric="roce")
    params = Params(tp_comm_overlap="full")

    def run() -> float:
        est = evaluate(w, hw, layout, params)
        assert est.mfu is not None
        return est.mfu * 100

    return Case(
        group="Llama 3 405B (Dubey et al. 2024), Table 4",
        name=f"{gpus} H100 TP8 PP16 DP{dp}",
        citation="arXiv:2407.21783 Table 4",
        published=tflops / 989 * 100,
        unit="% MFU",
        tolerance=0.15,
        fitted_on=False,
        run=run,
        family="hopper",
        assumption=(
            "4 virtual stages; gradients reduced once per step (ZeRO-1); "
            "RoCE 400G per GPU, no oversubscription"
        ),
    )


def _llama65() -> Case:
    w = make_workload(
        name="llama-65b",
        kind="pretrain",
        model=ModelShape(preset="llama-65b"),
        seq_len=2048,
        micro_batch=1,
        global_batch=2048,
        gradient_checkpointing="selective",
        tokens=1.4e12,
    )
    layout = Layout(256, 8, 4, 64, "zero1", "selective", micro_batch=1, grad_accum=32)

    def run() -> float:
        return evaluate(w, dgx_a100(), layout, Params()).tokens_per_s / 2048

    return Case(
        group="Frontier runs (cross-check)",
        name="LLaMA-65B on 2,048 A100-80GB",
        citation="arXiv:2302.13971 §2.4: ~380 tokens/s/GPU",
        published=380.0,
        unit="tokens/s/GPU",
        tolerance=0.15,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="TP8 PP4 with sequence parallelism and selective recomputation",
    )


def _deepseek() -> Case:
    w = make_workload(
        name="deepseek-v3",
        kind="pretrain",
        model=ModelShape(preset="deepseek-v3"),
        precision="fp8",
        seq_len=4096,
        micro_batch=1,
        global_batch=15360,
        tokens=1e12,
        pipeline={"schedule": "dualpipe"},  # §3.2.1, as the memory row below
    )
    layout = Layout(256, 1, 16, 128, "zero1", micro_batch=1, grad_accum=120, ep=64)
    hw = _hgx("h800-sxm", 400, 400)
    params = Params(ep_comm_overlap=True)  # DualPipe overlaps the all-to-alls (§3.2.1)

    def run() -> float:
        est = evaluate(w, hw, layout, params)
        assert est.time_to_train_s is not None
        return est.time_to_train_s * 2048 / 3600 / 1e3

    return Case(
        group="Frontier runs (cross-check)",
        name="DeepSeek-V3 per trillion tokens, 2,048 H800",
        citation="arXiv:2412.19437 §1/§3: 180K H800 GPU-hours per trillion tokens",
        published=180.0,
        unit="k GPU-hours",
        tolerance=0.15,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="PP16 DualPipe EP64 ZeRO-1 as published (§3.2), its all-to-alls overlapped "
        "(ep_comm_overlap); the preset's MTP module (depth 1, §4.2) beside the head, on the "
        "rank that also holds the first stage (§3.2.1); layers split evenly (the split is not "
        "published)",
    )


# The memory statements: both runs trained on 80 GB cards (80 GiB = 85.9 GB as the device
# reports). The case is the fullest pipeline rank of the published layout with the report's
# options, against the card. The statement is a bound (it fits), so the row is a cross-check;
# tests/test_stage_memory.py asserts the fit and the per-stage figures derived by hand.
FRONTIER_MEMORY = {
    "llama3": (
        "Llama 3 405B, TP8 PP16 VP8 on H100 (§3.3.2)",
        "arXiv:2407.21783 §3.3.2, Table 4",
        dict(
            model=ModelShape(preset="llama-3.1-405b"),
            precision="bf16",
            seq_len=8192,
            global_batch=2048,
            pipeline={"first_stage_layers": 7, "last_stage_layers": 7},
        ),
        "h100-sxm",
        Layout(2048, 8, 16, 128, "zero2", micro_batch=1, grad_accum=16, vp=8),
    ),
    "deepseek": (
        "DeepSeek-V3, PP16 DualPipe EP64 on H800 (§3.2-3.3)",
        "arXiv:2412.19437 §3.2.1-3.2.3, §3.3.3",
        dict(
            model=ModelShape(preset="deepseek-v3"),
            precision="fp8",
            seq_len=4096,
            global_batch=15360,
            pipeline={"schedule": "dualpipe"},
            memory_savings=[
                "recompute_norms",
                "recompute_up_projections",
                "recompute_activation_function",
                "fp8_activations",
                "bf16_moments",
            ],
        ),
        "h800-sxm",
        Layout(256, 1, 16, 128, "zero1", micro_batch=1, grad_accum=120, ep=64),
    ),
}


def _frontier_memory(key: str) -> Case:
    name, citation, fields, card, layout = FRONTIER_MEMORY[key]
    w = make_workload(name=key, kind="pretrain", micro_batch=1, tokens=1e12, **fields)
    hw = _hgx(card, 900 if card == "h100-sxm" else 400, 400)

    def run() -> float:
        return evaluate(w, hw, layout, Params(headroom=0.0)).memory.total_bytes / GB

    return Case(
        group="Frontier memory statements: fullest stage vs the 80 GB card (cross-check)",
        name=name,
        citation=citation,
        published=80 * GIB / GB,
        unit="GB/GPU",
        tolerance=0.15,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="a bound (trained on the card): below it is the statement",
        family="hopper",
    )


def _llama3_goodput() -> Case:
    w = make_workload(
        name="llama3-405b",
        kind="pretrain",
        model=ModelShape(preset="llama-3.1-405b"),
        seq_len=8192,
        micro_batch=1,
        global_batch=2048,
        tokens=15.6e12,
        pipeline={"first_stage_layers": 7, "last_stage_layers": 7},
    )
    layout = Layout(2048, 8, 16, 128, "zero1", micro_batch=1, grad_accum=16, vp=8)
    hw = _hgx("h100-sxm", 900, 400, fabric="roce")

    def run() -> float:
        est = evaluate(w, hw, layout, Params(tp_comm_overlap="full"))
        assert est.goodput is not None
        return est.goodput.fraction * 100

    return Case(
        group="Interruptions: Llama 3 405B effective training time (cross-check)",
        name="16,384 H100, 419 interruptions in 54 days",
        citation="arXiv:2407.21783 §3.3.4: more than 90% effective training time",
        published=90.0,
        unit="% goodput",
        tolerance=0.10,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="a lower bound; storage 100 GB/s per node; 10 min restarts (assumed)",
        family="hopper",
    )


NEMO_ROWS = (
    # preset, kind, GPUs, global batch, micro-batch, seq, TP, PP, CP, VP, tokens/s per GPU
    ("llama-2-7b", "pretrain", 8, 128, 1, 4096, 1, 1, 1, 1, 16847),
    ("llama-2-13b", "pretrain", 16, 128, 1, 4096, 1, 4, 1, 10, 8646),
    ("llama-2-70b", "pretrain", 64, 128, 1, 4096, 4, 4, 1, 20, 1707),
    ("llama-3-8b", "pretrain", 8, 128, 1, 8192, 1, 1, 2, 1, 12036),
    ("llama-3-70b", "pretrain", 64, 128, 1, 8192, 4, 4, 2, 5, 1533),
    ("llama-2-7b", "full_finetune", 8, 32, 1, 4096, 1, 1, 1, 1, 17120),
    ("llama-2-13b", "full_finetune", 8, 32, 1, 4096, 1, 4, 1, 1, 9741),
    ("llama-2-70b", "full_finetune", 16, 32, 1, 4096, 4, 4, 1, 1, 1833),
    ("llama-2-7b", "lora", 8, 32, 1, 4096, 1, 1, 1, 1, 25206),
    ("llama-2-13b", "lora", 8, 32, 1, 4096, 1, 1, 1, 1, 14161),
    ("llama-2-70b", "lora", 8, 32, 1, 4096, 2, 4, 1, 1, 2557),
)


# NeMo's GPT-3 configs (nemo/collections/llm/gpt/model/base.py: GPTConfig5B 24 layers, hidden
# 4096, 32 heads; GPTConfig20B 44, 6144, 48; GPTConfig175B 96, 12288, 96 as Brown et al. 2020
# Table 2.1), 4h GeLU MLP, shared embedding and output weights; the GPT-2 BPE vocabulary of
# 50,257 padded as Megatron pads it (make_vocab_size_divisible_by 128, times TP).
NEMO_GPT3_ROWS = (
    # name, hidden, heads, layers, GPUs, global batch, micro-batch, seq, TP, PP, VP, tokens/s/GPU
    ("gpt3-5b", 4096, 32, 24, 64, 2048, 4, 2048, 1, 1, 1, 22521),
    ("gpt3-20b", 6144, 48, 44, 64, 256, 2, 2048, 2, 1, 1, 5851),
    ("gpt3-175b", 12288, 96, 96, 128, 256, 1, 2048, 4, 8, 6, 726),
    ("gpt3-175b", 12288, 96, 96, 512, 2048, 2, 2048, 4, 8, 6, 782),
)


# The same table's Nemotron rows, with the shapes of NeMo's configs of those names
# (nemo/collections/llm/gpt/model/nemotron.py: Nemotron3Config8B 32 layers, hidden 4096, FFN
# 16,384, 32 heads; Nemotron3Config22B 40, 6144, 24,576, 48; Nemotron4Config340B 96, 18,432,
# 73,728, 96 heads in 8 query groups): squared-ReLU MLP (not gated), untied embeddings, a
# 256,000-token vocabulary (Nemotron-4 report, arXiv:2402.16819 §2). The table names the
# model only by size, so these are cross-checks.
NEMO_NEMOTRON_ROWS = (
    # name, layers, hidden, FFN, heads, KV heads, GPUs, global batch, micro-batch, TP, PP, VP,
    # tokens/s/GPU (sequence 4096)
    ("nemotron-8b", 32, 4096, 16384, 32, 32, 64, 256, 4, 2, 1, 1, 12701),
    ("nemotron-22b", 40, 6144, 24576, 48, 48, 64, 256, 2, 2, 4, 10, 4256),
    ("nemotron-340b", 96, 18432, 73728, 96, 8, 128, 32, 1, 8, 8, 12, 322),
)


def _padded_vocab(vocab: int, tp: int) -> int:
    step = 128 * tp
    return -(-vocab // step) * step


def _nemo(row: tuple[Any, ...]) -> Case:
    preset, kind, *figures = row
    return _nemo_case(ModelShape(preset=preset), preset, kind, tuple(figures))


def _nemo_gpt3(row: tuple[Any, ...]) -> Case:
    name, hidden, heads, layers, gpus, gbs, mb, seq, tp, pp, vp, published = row
    model = _gpt(hidden, heads, layers, vocab=_padded_vocab(50257, tp))
    return _nemo_case(model, name, "pretrain", (gpus, gbs, mb, seq, tp, pp, 1, vp, published))


def _nemo_nemotron(row: tuple[Any, ...]) -> Case:
    name, layers, hidden, ffn, heads, kv_heads, gpus, gbs, mb, tp, pp, vp, published = row
    model = ModelShape(
        layers=layers,
        hidden=hidden,
        ffn=ffn,
        heads=heads,
        kv_heads=kv_heads,
        vocab=256000,
        gated_ffn=False,
        tied_embeddings=False,
    )
    return _nemo_case(model, name, "pretrain", (gpus, gbs, mb, 4096, tp, pp, 1, vp, published))


def _nemo_case(model: ModelShape, name: str, kind: str, figures: tuple[Any, ...]) -> Case:
    gpus, gbs, mb, seq, tp, pp, cp, vp, published = figures
    held_out = not name.startswith("llama")
    shape_inferred = name.startswith("nemotron")
    dp = gpus // (tp * pp * cp)
    w = make_workload(
        name="nemo",
        kind=kind,
        model=model,
        precision="fp8",
        seq_len=seq,
        micro_batch=mb,
        global_batch=gbs,
        tokens=float(gbs * seq),
        framework="megatron",  # NeMo 24.07 runs Megatron-core
    )
    layout = Layout(
        nodes=max(1, gpus // 8),
        tp=tp,
        pp=pp,
        dp=dp,
        sharding="zero1",
        micro_batch=mb,
        grad_accum=gbs // (dp * mb),
        vp=vp,
        cp=cp,
    )
    hw = _hgx("h100-sxm", 900, 400)
    params = Params(tp_comm_overlap="full")

    def run() -> float:
        est = evaluate(w, hw, layout, params)
        assert est.step_time_s is not None
        return gbs * seq / est.step_time_s / gpus

    label = {"pretrain": "pretraining", "full_finetune": "SFT", "lora": "LoRA"}[kind]
    pretraining = kind == "pretrain"
    # The Llama pretraining rows fit Hopper's GEMM_SHAPES (efficiency.py); the GPT-3 rows of
    # the same table are held out (checked, never fitted); the fine-tuning rows stay
    # cross-checks: they run SQuAD-style samples, whose attention the model charges at the full
    # sequence length.
    if not pretraining:
        group = "NeMo 24.07 on DGX-H100, FP8, fine-tuning (cross-check)"
    elif shape_inferred:
        group = "NeMo 24.07 on DGX-H100, FP8, Nemotron pretraining (cross-check)"
    elif held_out:
        group = "NeMo 24.07 on DGX-H100, FP8, GPT-3 pretraining (held out)"
    else:
        group = "NeMo 24.07 on DGX-H100, FP8, pretraining"
    return Case(
        group=group,
        name=f"{name} {label} {gpus} GPUs TP{tp} PP{pp} CP{cp} VP{vp}",
        citation="NVIDIA/NeMo docs/source/performance/performance_summary.md @070a0bb",
        published=float(published),
        unit="tokens/s/GPU",
        tolerance=0.15,
        fitted_on=pretraining and not held_out,
        run=run,
        gated=pretraining and not shape_inferred,
        assumption="no recomputation, distributed optimizer, TP overlap, step time only"
        + ("" if pretraining else "; attention over the full sequence (samples are shorter)")
        + ("; the shape of NeMo's config of that name" if shape_inferred else ""),
        family="hopper",
    )


def all_cases() -> list[Case]:
    cases = [_narayanan(r) for r in NARAYANAN_ROWS]
    cases += [_korthikanti(r, mode) for r in KORTHIKANTI_ROWS for mode in ("full", "sel")]
    cases += [
        _figure1(r, mode, part)
        for r in KORTHIKANTI_ROWS
        for mode in ("none", "seqsel")
        for part in ("states", "activations")
    ]
    cases += [
        _zero(size, dp, stage)
        for size, rows in ZERO_TABLE1.items()
        for dp in rows
        for stage in (1, 2, 3)
    ]
    cases.append(_vllm_per_token())
    cases += [_vllm_params(m, tp, p) for m, tp, p, _, _ in VLLM_TABLE1]
    cases += [_vllm_slots(m, tp, kv, slots) for m, tp, _, kv, slots in VLLM_TABLE1]
    cases += [_gpt_fast(*r) for r in GPTFAST_ROWS]
    cases += [_megatron_h100(r) for r in MEGATRON_H100_ROWS]
    cases += [_llama3(8192, 64, 32, 430), _llama3(16384, 128, 16, 400)]
    cases += [_llama65(), _deepseek()]
    cases += [_frontier_memory(k) for k in FRONTIER_MEMORY]
    cases.append(_llama3_goodput())
    cases += [_nemo(r) for r in NEMO_ROWS]
    cases += [_nemo_gpt3(r) for r in NEMO_GPT3_ROWS]
    cases += [_nemo_nemotron(r) for r in NEMO_NEMOTRON_ROWS]
    return cases
