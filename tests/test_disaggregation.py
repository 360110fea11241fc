"""Disaggregated serving: separate prefill and decode pools, searched beside aggregated
layouts, chosen by cost, and explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.validation_serving import dgx

from gpusolve.estimate import resolve_arch, search_layouts
from gpusolve.estimate.disaggregation import kv_transfer
from gpusolve.estimate.layout import ConfigEstimate
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload

ROOT = Path(__file__).resolve().parents[1]


def _chat(**over: object) -> InferenceWorkload:
    w = make_workload(
        {
            "name": "chat",
            "kind": "inference",
            "model": ModelShape(preset="llama-3.1-70b"),
            "precision": "fp8",
            "ttft_ms": 2000,
            **over,
        }
    )
    assert isinstance(w, InferenceWorkload)
    return w


# Long prompts under a tight stream target, and short prompts under a relaxed one (the two
# shipped examples' workloads).
TIGHT = {"prompt_tokens": 2000, "output_tokens": 500, "concurrency": 256, "tpot_ms": 20}
RELAXED = {"prompt_tokens": 1000, "output_tokens": 300, "concurrency": 1000, "tpot_ms": 50}


def _split(w: InferenceWorkload) -> tuple[list[ConfigEstimate], ConfigEstimate]:
    result = search_layouts(w, dgx("h100-sxm"), Params(), max_nodes=16, every_size=True)
    pooled = [e for e in result.feasible if e.serving and e.serving.disaggregated]
    aggregated = [e for e in result.feasible if e.serving and not e.serving.disaggregated]
    assert len(pooled) == 1
    return aggregated, pooled[0]


def test_disaggregation_wins_under_a_tight_stream_target_with_long_prompts() -> None:
    aggregated, pooled = _split(_chat(**TIGHT))
    best = min(aggregated, key=lambda e: (e.nodes, e.gpus))
    assert pooled.nodes < best.nodes
    assert pooled.serving is not None and best.serving is not None
    assert pooled.serving.comparison.startswith("disaggregation saves")
    assert best.serving.comparison == pooled.serving.comparison
    # Both pools meet the targets: decode steps carry no prompt chunks.
    assert pooled.serving.tpot_s <= 0.020 and pooled.serving.ttft_s <= 2.0
    assert pooled.serving.decode_step["prefill"] == 0.0


def test_disaggregation_loses_where_prompt_chunks_fit_the_decode_steps() -> None:
    aggregated, pooled = _split(_chat(**RELAXED))
    best = min(aggregated, key=lambda e: (e.gpus, e.nodes))
    assert best.gpus < pooled.gpus and best.nodes <= pooled.nodes
    assert pooled.serving is not None
    assert pooled.serving.comparison.startswith("disaggregation costs")


def test_the_pools_add_up() -> None:
    _, pooled = _split(_chat(**TIGHT))
    serving = pooled.serving
    assert serving is not None and serving.disaggregated is not None
    pools = serving.disaggregated
    assert pooled.gpus == pools.prefill_gpus + pools.decode_gpus
    assert pooled.layout.replicas == pools.decode_replicas
    assert pooled.layout.replicas * serving.batch >= 256
    assert serving.ttft_s == pytest.approx(
        pools.prefill_ttft_s + pools.queue_s + pools.kv_transfer_s
    )
    assert 0 < pools.prefill_utilisation < 1


def test_the_kv_transfer_crosses_the_prefill_replicas_nics() -> None:
    # 2,000 prompt tokens of Llama-3-70B's FP8 cache, 2 · 80 layers · 8 KV heads · 128 · 1 B
    # = 163,840 B per token, sent by 2 GPUs over their NIC share each.
    w = _chat(**TIGHT)
    hw = dgx("h100-sxm")
    seconds, link, _ = kv_transfer(w, resolve_arch(w.model), hw, 2, one_server=False)
    assert seconds == pytest.approx(2000 * 163_840 / (2 * hw.nic_bytes_per_s()))
    assert "fabric" in link
    inside, link_in, _ = kv_transfer(w, resolve_arch(w.model), hw, 2, one_server=True)
    assert inside < seconds and "NVLink" in link_in


@pytest.mark.parametrize(("mode", "pooled"), [("off", False), ("only", True)])
def test_the_user_can_keep_one_mode(mode: str, pooled: bool) -> None:
    w = _chat(**TIGHT, disaggregation=mode)
    result = search_layouts(w, dgx("h100-sxm"), Params(), max_nodes=16, every_size=True)
    assert result.feasible
    assert all(bool(e.serving and e.serving.disaggregated) == pooled for e in result.feasible)


@pytest.mark.parametrize(
    ("example", "verdict", "pooled"),
    [
        ("chat-70b-disaggregated", "disaggregation saves", True),
        ("chat-70b-aggregated", "disaggregation costs", False),
    ],
)
def test_the_examples_say_which_mode_won_and_why(
    gpusolve,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    example: str,
    verdict: str,
    pooled: bool,
) -> None:
    # Sized to the estimate (margin 0): at the default 20% the disaggregated example's two
    # modes need the same 24 GPUs and aggregated serving takes fewer servers.
    bare = tmp_path / f"{example}.yaml"
    text = (ROOT / "examples" / f"{example}.yaml").read_text(encoding="utf-8")
    bare.write_text(text + "\nmargin: 0\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(bare), "--format", "json")
    assert result.code == 0, result.err
    (deployment,) = json.loads(result.out)["deployments"]
    lines = deployment["serving"]
    assert any(line.startswith(verdict) for line in lines), lines
    assert any(line.startswith("disaggregated:") for line in lines) == pooled
