"""Serving at a request rate: the requirements' rate, lengths and percentile SLA, the
scheduler simulation (estimate/loadsim.py) on step times worked out by hand, and the estimate
and search built on it (estimate/servingload.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError
from tests.factories.files import write_file
from tests.support.validation_cases import _hgx

from gpusolve.estimate import Layout, evaluate, resolve_arch, search_layouts
from gpusolve.estimate.draws import SplitMix64, percentiles
from gpusolve.estimate.loadsim import Requests, Scheduler, StepCost, simulate
from gpusolve.estimate.servingload import draw_requests, simulate_load
from gpusolve.estimate.servingrates import (
    Rates,
)
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload


def _chat(**over: object) -> InferenceWorkload:
    w = make_workload(
        {
            "name": "chat",
            "kind": "inference",
            "model": ModelShape(preset="llama-2-7b"),
            "precision": "bf16",
            "prompt_tokens": 500,
            "output_tokens": 200,
            "request_rate": 1.0,
            "disaggregation": "off",
            **over,
        }
    )
    assert isinstance(w, InferenceWorkload)
    return w


# --------------------------------------------------------------------------- requirements


def test_a_rate_alone_asks_for_rate_times_output_tokens() -> None:
    w = _chat(request_rate=4.0)
    assert w.target_tokens_per_s == pytest.approx(4.0 * 200)


def test_a_histogram_sets_the_mean_it_states() -> None:
    w = _chat(prompt_tokens=None, prompt_lengths={"histogram": [[100, 1], [300, 1]]})
    assert w.prompt_tokens == 200  # (100 + 300) / 2


@pytest.mark.parametrize(
    ("over", "where"),
    [
        ({"output_tokens": None}, "request_rate"),
        ({"request_rate": None, "concurrency": 8, "sla": {"ttft_p99_ms": 500}}, "sla"),
        ({"prompt_lengths": {"histogram": [[100, 1], [300, 1]]}}, "prompt_lengths"),
        ({"prompt_lengths": {"stdev": 10, "histogram": [[100, 1]]}}, "prompt_lengths"),
        ({"sla": {}}, "sla"),
        ({"request_rate": 0}, "request_rate"),
        ({"sla": {"tpot_p95_ms": 50}}, "sla"),  # P50, P90 and P99 only
    ],
)
def test_bad_rate_inputs_are_errors_at_their_field(over: dict[str, object], where: str) -> None:
    with pytest.raises(ValidationError) as err:
        _chat(**over)
    first = err.value.errors()[0]
    # A model-level check names its field through the error's path (the loader locates it).
    path = getattr(first.get("ctx", {}).get("error"), "path", ())
    assert where in [str(x) for x in (*first["loc"], *path)]


def test_a_bad_value_in_a_file_is_located_at_its_line(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reqs = write_file(
        tmp_path,
        "workloads:\n"
        "  - name: chat\n"
        "    kind: inference\n"
        "    model: {preset: llama-2-7b}\n"
        "    prompt_tokens: 500\n"
        "    output_tokens: 200\n"
        "    request_rate: 2\n"
        "    sla:\n"
        "      ttft_p99_ms: -5\n",
    )
    res = gpusolve("estimate", str(reqs), "--card", "h100-sxm")
    assert res.code == 2
    assert ":9" in res.err and "ttft_p99_ms" in res.err
    assert "Traceback" not in res.err


# --------------------------------------------------------------------------- the scheduler

# A step costs 10 ms plus 0.01 ms per token it computes; no KV or attention term, so every
# figure below is arithmetic on those two numbers.
COST = StepCost(stage_s=lambda rows: 0.010 + 0.00001 * rows, kv_s=0.0, attention_s=0.0)
ROOMY = Scheduler(token_budget=2048, max_running=256, kv_tokens=1_000_000)


def _requests(arrival: list[float], prompt: list[int], output: list[int]) -> Requests:
    return Requests(arrival_s=arrival, prompt=prompt, output=output)


def test_one_request_alone_waits_one_prefill_step_then_decodes_at_batch_one() -> None:
    res = simulate(_requests([0.0], [100], [11]), ROOMY, COST)
    assert res.ttft_s[0] == pytest.approx(0.010 + 100 * 0.00001)  # one 100-row step: 11 ms
    assert res.tpot_s[0] == pytest.approx(0.010 + 0.00001)  # ten 1-row steps of 10.01 ms


def test_pipeline_stages_run_one_prompt_chunk_whole_in_turn() -> None:
    # Two stages: a 100-token prompt passes both at 100 rows, 2 x (10 + 1) ms; one decode row
    # is a micro-batch of 1 on each, 2 x 10.01 ms; the hand-off adds 0.5 ms to each step.
    two = StepCost(
        stage_s=lambda rows: 0.010 + 0.00001 * rows,
        kv_s=0.0,
        attention_s=0.0,
        stages=2,
        hop_s=0.0005,
    )
    res = simulate(_requests([0.0], [100], [3]), ROOMY, two)
    assert res.ttft_s[0] == pytest.approx(2 * 0.011 + 0.0005)
    assert res.tpot_s[0] == pytest.approx(2 * 0.01001 + 0.0005)


def test_a_long_prompt_is_prefilled_in_chunks_of_the_token_budget() -> None:
    res = simulate(_requests([0.0], [5000], [2]), ROOMY, COST)
    # 2,048 + 2,048 + 904 rows: (10 + 20.48) + (10 + 20.48) + (10 + 9.04) ms
    assert res.ttft_s[0] == pytest.approx(0.08)


def test_a_request_arriving_during_a_step_waits_for_its_end() -> None:
    # The first request's prefill runs 0-11 ms; the second arrives at 1 ms and is prefilled
    # with the first one's first decode: 1 + 100 rows, 11.01 ms, ending at 22.01 ms.
    res = simulate(_requests([0.0, 0.001], [100, 100], [3, 3]), ROOMY, COST)
    assert res.ttft_s[1] == pytest.approx(0.02201 - 0.001)


def test_a_full_cache_preempts_the_latest_request_which_recomputes() -> None:
    # 45 KV tokens: both 10-token prompts fit (25 left); each decode step takes 2 more, so
    # after 12 steps 1 is left and the second request is preempted to free its 22 tokens.
    tight = Scheduler(token_budget=2048, max_running=256, kv_tokens=45)
    res = simulate(_requests([0.0, 0.0], [10, 10], [20, 20]), tight, COST)
    assert res.preemptions == 1
    assert all(math.isfinite(f) for f in res.finish_s)
    assert res.ttft_s[1] == pytest.approx(res.ttft_s[0])  # its first token came before
    assert res.finish_s[1] > res.finish_s[0]


def test_a_prompt_larger_than_the_cache_is_refused() -> None:
    small = Scheduler(token_budget=2048, max_running=256, kv_tokens=50)
    res = simulate(_requests([0.0, 0.0], [100, 10], [5, 5]), small, COST)
    assert res.refused == 1 and math.isinf(res.ttft_s[0]) and math.isfinite(res.ttft_s[1])


def test_the_generator_is_splitmix64() -> None:
    # The published sequence for seed 0 (Steele, Lea and Flood 2014; Java's SplittableRandom).
    rng = SplitMix64(0)
    assert [rng.next_u64() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]


def test_percentiles_interpolate_between_order_statistics() -> None:
    # P50 of 1..4 sits halfway between 2 and 3; P90 at 0.9 x 3 = 2.7 positions: 3 + 0.7.
    assert percentiles([4.0, 1.0, 3.0, 2.0], (50, 90)) == pytest.approx((2.5, 3.7))
    # A refused request (infinite TTFT) makes every percentile that reaches it infinite.
    assert percentiles([1.0, 2.0, 3.0, math.inf], (50, 99)) == (2.5, math.inf)
    assert math.isnan(percentiles([math.nan], (50,))[0])


def test_the_simulation_is_the_same_for_a_seed() -> None:
    w = _chat(prompt_lengths={"stdev": 300}, output_lengths={"stdev": 100})
    a, b = draw_requests(w, 2.0, n=300), draw_requests(w, 2.0, n=300)
    assert a == b
    other = draw_requests(w, 2.0, n=300, seed=1)
    assert a.prompt != other.prompt
    # Log-normal lengths keep their mean (within the sampling error of 300 draws).
    assert sum(a.prompt) / 300 == pytest.approx(500, rel=0.1)
    # Poisson gaps average 1 / rate (300 gaps: within about 3 standard errors of 5.8%).
    assert a.arrival_s[-1] / 299 == pytest.approx(0.5, rel=0.18)


# --------------------------------------------------------------------------- the estimate


def test_far_below_capacity_ttft_is_one_prefill_and_tpot_the_batch_one_step() -> None:
    # One request every 100 s (evenly spaced): none ever waits for another.
    w = _chat(request_rate=0.01, arrivals="constant")
    hw = _hgx("h100-sxm", 900, 400)
    lay = Layout(1, 1, 1, 1)
    load = simulate_load(w, resolve_arch(w.model), hw, lay, Params())
    rates = Rates(w, resolve_arch(w.model), hw, lay)
    # serving.py's own figures: one prompt's prefill alone (kernel gaps of a step added:
    # 32 layers x 10 kernels x 2 us), and the decode step of one sequence.
    gaps = 32 * 10 * 2e-6
    assert load.ttft_s[0] == pytest.approx(rates.ttft_s(500) + gaps, rel=1e-6)
    assert load.tpot_s[0] == pytest.approx(rates.tpot_decode_s(1, prefill=False), rel=0.02)
    assert load.ttft_s[2] == pytest.approx(load.ttft_s[0], rel=1e-6)  # no queueing at all


def test_above_capacity_goodput_saturates_and_latency_grows() -> None:
    hw = _hgx("h100-sxm", 900, 400)
    lay = Layout(1, 1, 1, 1)
    figures = []
    for rate in (40.0, 80.0, 160.0):
        w = _chat(request_rate=rate, sla={"ttft_p99_ms": 100000, "tpot_p99_ms": 100000})
        figures.append(simulate_load(w, resolve_arch(w.model), hw, lay, Params()))
    low, mid, high = figures
    assert mid.saturated and high.saturated
    # Completed requests/s stay at the replica's capacity however many arrive.
    assert high.throughput_rps == pytest.approx(mid.throughput_rps, rel=0.15)
    assert high.goodput_rps is not None and high.goodput_rps < 0.5 * high.request_rate
    assert low.ttft_s[1] < mid.ttft_s[1] < high.ttft_s[1]


def test_a_missed_percentile_is_a_reason_with_its_figure() -> None:
    # 5 ms is below one 500-token prefill of a 7B model on an H100 (about 13 ms of GEMMs).
    w = _chat(request_rate=5.0, sla={"ttft_p90_ms": 5})
    est = evaluate(w, _hgx("h100-sxm", 900, 400), Layout(1, 1, 1, 1), Params())
    assert not est.feasible
    assert any("TTFT P90" in r and "5 ms target" in r for r in est.reasons)
    assert est.serving is not None and est.serving.load is not None
    assert not est.serving.load.meets_sla


def test_a_saturated_replica_misses_every_target_however_its_sample_reads() -> None:
    w = _chat(request_rate=200.0, sla={"tpot_p99_ms": 100000})
    est = evaluate(w, _hgx("h100-sxm", 900, 400), Layout(1, 1, 1, 1), Params())
    assert not est.feasible
    assert any("grow without bound" in r for r in est.reasons)


def test_the_search_takes_the_fewest_replicas_that_meet_the_percentiles() -> None:
    hw = _hgx("h100-sxm", 900, 400)
    w = _chat(request_rate=30.0, sla={"ttft_p99_ms": 1000, "tpot_p90_ms": 40})
    result = search_layouts(w, hw, Params(), max_nodes=4, whole_nodes=False)
    best = min(result.feasible, key=lambda e: e.gpus)
    assert best.serving is not None and best.serving.load is not None
    assert best.serving.load.meets_sla
    lay = best.layout
    fewer = simulate_load(w, resolve_arch(w.model), hw, lay, Params(), lay.replicas - 1)
    assert lay.replicas == 1 or not fewer.meets_sla


def test_disaggregated_pools_are_not_offered_against_percentile_targets() -> None:
    # Their percentiles are not simulated, so they cannot be shown to meet the SLA.
    w = _chat(disaggregation="auto", sla={"ttft_p99_ms": 5000})
    result = search_layouts(w, _hgx("h100-sxm", 900, 400), Params(), max_nodes=2)
    assert result.feasible
    assert all(e.serving and e.serving.disaggregated is None for e in result.feasible)


def test_estimate_prints_percentiles_and_goodput(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reqs = write_file(
        tmp_path,
        "workloads:\n"
        "  - name: chat\n"
        "    kind: inference\n"
        "    model: {preset: llama-2-7b}\n"
        "    prompt_tokens: 500\n"
        "    output_tokens: 200\n"
        "    prompt_lengths: {stdev: 400}\n"
        "    output_lengths: {histogram: [[50, 1], [350, 1]]}\n"
        "    request_rate: 5\n"
        "    sla: {ttft_p99_ms: 2000, tpot_p90_ms: 60}\n"
        '    disaggregation: "off"\n',
    )
    res = gpusolve("estimate", str(reqs), "--card", "h100-sxm", "--gpus", "1")
    assert res.code == 0, res.err
    assert "TTFT_p50" in res.out and "TPOT_p99" in res.out and "goodput/s" in res.out
    res = gpusolve("estimate", str(reqs), "--card", "h100-sxm", "--gpus", "1", "--format", "json")
    load = json.loads(res.out)["workloads"][0]["configs"][0]["serving"]["load"]
    assert load["request_rate"] == 5 and len(load["ttft_ms"]) == 3
    assert load["ttft_ms"][0] <= load["ttft_ms"][1] <= load["ttft_ms"][2]
    assert load["goodput_rps"] <= load["throughput_rps"]
    page = tmp_path / "estimate.html"
    args = ("estimate", str(reqs), "--card", "h100-sxm", "--gpus", "1", "--format", "html")
    assert gpusolve(*args, "-o", str(page)).code == 0
    assert "TTFT P50/P90/P99" in page.read_text() and "goodput" in page.read_text()


def test_a_plans_serving_line_gives_the_percentiles_and_goodput() -> None:
    from gpusolve.estimate.loadsim import LoadFigures
    from gpusolve.estimate.servingload import load_summary

    load = LoadFigures(
        request_rate=8.0,
        replicas=3,
        requests=1000,
        arrivals="poisson",
        ttft_s=(0.1205, 0.3401, 1.2),
        tpot_s=(0.0301, 0.0425, 0.05504),
        throughput_rps=7.9,
        steady_rps=8.0,
        goodput_rps=7.85,
        mean_running=40.0,
        preemptions=0,
        refused=0,
        kv_tokens=100_000,
    )
    assert load_summary(load) == (
        "at 8 requests/s over 3 replica(s) (simulated): TTFT P50/P90/P99 120/340/1,200 ms, "
        "TPOT P50/P90/P99 30.1/42.5/55.0 ms, goodput 7.85 requests/s (SLA met)"
    )


def test_plan_prints_the_percentiles_of_a_request_rate_service(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reqs = write_file(
        tmp_path,
        "currency: CNY\n"
        "horizon_months: 36\n"
        "workloads:\n"
        "  - name: chat\n"
        "    kind: inference\n"
        "    model: {preset: llama-2-7b}\n"
        "    prompt_tokens: 500\n"
        "    output_tokens: 200\n"
        "    request_rate: 5\n"
        "    sla: {ttft_p99_ms: 2000, tpot_p90_ms: 60}\n"
        '    disaggregation: "off"\n',
    )
    res = gpusolve("plan", str(reqs), "--work-limit", "60")
    assert res.code == 0, res.err
    serving = [line for line in res.out.splitlines() if line.strip().startswith("serving")]
    assert any("TTFT P50/P90/P99" in s and "TPOT P50/P90/P99" in s for s in serving), res.out
    assert any("goodput" in s and "SLA met" in s for s in serving), res.out
