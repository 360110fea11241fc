"""Held-out serving rows on CDNA3 (AMD Instinct MI300X), reported beside the gated suite.

AMD's "Performance results" page for ROCm (amd.com/en/developer/resources/rocm-hub/dev-ai/
performance-results.html, the snapshot whose throughput table is based on the container
rocm/vllm:rocm6.3.1_instinct_vllm0.8.3_20250410, released 2025-04-13): vLLM on 8 x MI300X
(192 GB, 750 W), TP8, amd/Llama-3.1-70B-Instruct-FP8-KV and -405B-, a local client at an
infinite request rate, `Max Num Seqs` = the number of prompts, total output tokens/s.

Reported, not gated, for two stated reasons:
- the model runs CDNA3 decode at the training GEMM rate: no decode-shaped GEMM measurement of
  any CDNA3 card is published (estimate/decode_rates.py says so in every MI300X estimate),
  and none could be measured here;
- the same page's snapshots spread the same row by 25% on the same hardware: 70B 128/2048
  reads 16,364.9 (vLLM 0.8.3, 2025-04), 16,581.5 (0.9.0.1, 2025-06), 13,818.7 (0.10.1,
  2025-09) and 13,212.5 tokens/s (0.10.2, 2025-10).
The batch is what vLLM's KV cache holds at its default 0.9 of memory (the engine table's
reserve) at the live context, capped by the stated `Max Num Seqs`.
"""

from __future__ import annotations

from tests.support.validation_cases import Case, shipped_card

from gpusolve.estimate import Hardware, Layout, evaluate, resolve_arch
from gpusolve.estimate.layout import usable_memory_bytes
from gpusolve.estimate.serving import max_batch_by_memory, serving_params
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload

AMD_CITATION = (
    "AMD ROCm performance results, vLLM throughput on MI300X "
    "(rocm/vllm:rocm6.3.1_instinct_vllm0.8.3_20250410)"
)
# (preset, ISL, OSL) -> (Max Num Seqs, total output tokens/s).
MI300X_VLLM: dict[tuple[str, int, int], tuple[int, float]] = {
    ("llama-3.1-70b", 128, 2048): (3200, 16364.9),
    ("llama-3.1-70b", 128, 4096): (1500, 12171.0),
    ("llama-3.1-70b", 500, 2000): (2000, 13290.4),
    ("llama-3.1-70b", 2048, 2048): (1500, 8216.5),
    ("llama-3.1-405b", 128, 2048): (1500, 4331.6),
    ("llama-3.1-405b", 128, 4096): (1500, 3409.9),
    ("llama-3.1-405b", 500, 2000): (2000, 3184.0),
    ("llama-3.1-405b", 2048, 2048): (500, 2154.3),
}


def mi300x_platform() -> Hardware:
    """8 x MI300X on the OAM board: each GPU linked to the seven others by Infinity Fabric,
    896 GB/s of peer bandwidth per GPU (catalog/servers.yaml mi300x-8gpu-oam)."""
    return Hardware(
        card=shipped_card("mi300x"),
        gpus_per_node=8,
        intra_node_bandwidth_gbs=896,
        inter_node_gbps_per_gpu=400,
        storage_write_gbs=20,
        label="mi300x-8gpu-oam",
        topology="full_mesh",
        fabric="roce",
    )


def _case(preset: str, isl: int, osl: int, max_seqs: int, published: float) -> Case:
    w = make_workload(
        name="vllm-throughput",
        kind="inference",
        model=ModelShape(preset=preset),
        precision="fp8",
        kv_cache_precision="fp8",
        prompt_tokens=isl,
        output_tokens=osl,
        concurrency=1,
        engine="vllm",
    )
    assert isinstance(w, InferenceWorkload)
    hw = mi300x_platform()

    def run() -> float:
        arch = resolve_arch(w.model)
        probe = Layout(1, 8, 1, 1)
        kept = serving_params(w, arch, probe, Params(), hw.card.reported_memory_bytes)
        usable = usable_memory_bytes(hw.card, kept.headroom)
        batch = max(1, min(max_seqs, max_batch_by_memory(w, arch, probe, usable, kept)))
        layout = Layout(1, 8, 1, 1, micro_batch=batch)
        return evaluate(w, hw, layout, Params(headroom=0.0)).tokens_per_s

    return Case(
        group="vLLM on 8 x MI300X, AMD performance results (held out, cross-check)",
        name=f"{preset} FP8 TP8 {isl}/{osl}",
        citation=AMD_CITATION,
        published=published,
        unit="tokens/s",
        tolerance=0.20,
        fitted_on=False,
        run=run,
        gated=False,
        assumption="CDNA3 decodes at the training GEMM rate (no published decode-shaped "
        "measurement); AMD's own snapshots of the 70B 128/2048 row spread by 25% on the same "
        "hardware; FP8 KV cache; the batch vLLM's KV cache holds at 0.9 of memory",
    )


def cdna_cases() -> list[Case]:
    return [
        _case(preset, isl, osl, seqs, published)
        for (preset, isl, osl), (seqs, published) in MI300X_VLLM.items()
    ]
