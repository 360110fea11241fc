"""`bench.sh` for a serving deployment: the engine's own benchmark client at the plan's
request shape and concurrency, with its latency targets as goodput, and the generated
tokens/s the plan bought to compare with what it prints.

vLLM: `vllm bench serve` (vllm/benchmarks/serve.py: --max-concurrency, --goodput
ttft:MS tpot:MS, --ignore-eos; random dataset --random-input-len/--random-output-len,
--random-range-ratio 0 = exactly those lengths). SGLang: `python -m sglang.bench_serving`
(sglang/benchmark/serving.py: the same names; its random lengths are drawn from
[len x ratio, len], so ratio 1 = exactly those lengths, sglang/benchmark/datasets/common.py
compute_random_lens; it ignores EOS by default).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.serving import request_shape
from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import InferenceWorkload
from gpusolve.render.launch.common import LaunchFile, quoted, script
from gpusolve.render.launch.models import Model
from gpusolve.render.launch.serving import FIRST_SERVE_PORT

# Ten rounds of the concurrency: every slot is refilled ten times, so the ramp-up and the
# drain are a small part of the measured window (a method choice, not a plan figure).
ROUNDS = 10


@dataclass(frozen=True)
class BenchTarget:
    """What one benchmark run drives and what the plan says it should get."""

    prompt_tokens: int
    output_tokens: int
    concurrency: int
    prompts: int
    tokens_per_s: float  # generated tokens/s the plan bought for what is benchmarked
    ttft_ms: float | None
    tpot_ms: float | None
    scope: str  # what is benchmarked, in words


def bench_target(d: Deployment, w: InferenceWorkload) -> BenchTarget:
    prompt, output, _ = request_shape(w)
    if d.pools is not None:  # through the router: the whole deployment
        concurrency = d.parallel.micro_batch * d.pools.decode_replicas
        rate, scope = d.throughput, "the whole deployment, through router.sh"
    else:  # one replica: the deployment's throughput is replicas x this
        concurrency = d.parallel.micro_batch
        rate = d.throughput / max(1, d.replicas)
        scope = f"one replica (the deployment runs {d.replicas})"
    return BenchTarget(
        prompt_tokens=max(1, round(prompt)),
        output_tokens=max(1, round(output)),
        concurrency=concurrency,
        prompts=ROUNDS * concurrency,
        tokens_per_s=rate,
        ttft_ms=w.ttft_ms,
        tpot_ms=w.tpot_ms,
        scope=scope,
    )


def _goodput(t: BenchTarget) -> list[str]:
    slos = [f"ttft:{t.ttft_ms:g}"] if t.ttft_ms is not None else []
    slos += [f"tpot:{t.tpot_ms:g}"] if t.tpot_ms is not None else []
    return ["--goodput", *slos] if slos else []


def _random_dataset(t: BenchTarget, backend: str, range_ratio: str) -> list[str]:
    """Random prompts of the target's lengths (a range ratio of 0 or 1 keeps them exact in
    the engine's own benchmark)."""
    return [
        "--backend", backend,
        "--dataset-name", "random",
        "--random-input-len", str(t.prompt_tokens),
        "--random-output-len", str(t.output_tokens),
        "--random-range-ratio", range_ratio,
    ]  # fmt: skip


def _closed_loop(t: BenchTarget) -> list[str]:
    """The target's prompts, at most its concurrency in flight, sent as fast as admitted."""
    return [
        "--num-prompts", str(t.prompts),
        "--max-concurrency", str(t.concurrency),
        "--request-rate", "inf",
    ]  # fmt: skip


def vllm_bench_args(t: BenchTarget) -> list[str]:
    return [
        *_random_dataset(t, "vllm", "0"),
        "--ignore-eos",
        *_closed_loop(t),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        *_goodput(t),
    ]  # fmt: skip


def sglang_bench_args(t: BenchTarget) -> list[str]:
    return [*_random_dataset(t, "sglang", "1"), *_closed_loop(t), *_goodput(t)]


def bench_file(d: Deployment, w: InferenceWorkload, model: Model) -> LaunchFile:
    t = bench_target(d, w)
    served = model.served or "${MODEL:?set MODEL to the served model}"
    ref = f'"{served}"' if served.startswith("$") else quoted([served])
    targets = []
    if t.ttft_ms is not None:
        targets.append(f"TTFT <= {t.ttft_ms:g} ms")
    if t.tpot_ms is not None:
        targets.append(f"TPOT <= {t.tpot_ms:g} ms")
    start = "router.sh (after prefill/ and decode/)" if d.pools else "vllm.sh or sglang.sh"
    lines = [
        f"# {d.workload}: check, before paying, that the hardware delivers what the plan "
        f"bought, for {t.scope}.",
        f"# Expected output tokens/s: {t.tokens_per_s:,.0f} at {t.concurrency} concurrent "
        f"requests of {t.prompt_tokens} prompt + {t.output_tokens} output tokens.",
        "# Latency targets (goodput): " + (", ".join(targets) if targets else "none given") + ".",
        f"# Start {start} first, then: bash bench.sh [vllm|sglang]. Compare the printed",
        "# output token throughput with the figure above, and the goodput with the request",
        "# throughput: a shortfall means the purchase does not deliver the plan.",
        'HOST="${HOST:-127.0.0.1}"',
        'ENGINE="${1:-vllm}"',
        'if [ "$ENGINE" = vllm ]; then',
        f'  exec vllm bench serve --base-url "http://${{HOST}}:{FIRST_SERVE_PORT}" --model {ref} '
        + quoted(vllm_bench_args(t)),
        "fi",
        f'exec python -m sglang.bench_serving --host "$HOST" --port {FIRST_SERVE_PORT} '
        f"--model {ref} " + quoted(sglang_bench_args(t)),
    ]
    return LaunchFile(f"{d.workload}/bench.sh", script(lines))
