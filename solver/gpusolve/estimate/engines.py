"""Serving engines as their schedulers admit requests and as they hold memory back.

An engine decides two things the physics cannot guess:

  * how much KV cache a running request holds against the pool (`reserve`):
      full  the prompt plus every output token it may generate, reserved at admission, so a
            started request is never paused. TensorRT-LLM's default capacity scheduler,
            GUARANTEED_NO_EVICT ("guarantee that a started request is never paused",
            TensorRT-LLM docs, performance-tuning-guide/useful-runtime-flags.md, "Capacity
            Scheduler Policy: GUARANTEED_NO_EVICT (default)").
      mean  blocks as tokens arrive: a request holds its live context, on average P + O/2,
            and the engine preempts (vLLM: "when the KV cache space is insufficient ... vLLM
            preempts requests", docs.vllm.ai, Optimization and Tuning, "Preemption") or retracts
            (SGLang, "KV cache pool is full. Retract requests") when the pool runs out. vLLM's
            scheduler admits on the blocks of the tokens known now (vllm/v1/core/sched/
            scheduler.py, `allocate_slots` for the new tokens only); SGLang's admits on the
            prompt plus `new_token_ratio` of the remaining output, a ratio that decays from
            0.7 towards 0.1 while nothing is retracted (python/sglang/srt/managers/
            scheduler.py; global_config: init_new_token_ratio 0.7, base_min 0.1), which is
            the mean live context at steady state.
  * how much of the card its static pools may take (`memory_fraction`) and what it profiles
    before sizing the KV pool (`profile_tokens`: one forward over that many tokens, whose
    activation peak stays reserved):
      vLLM      gpu_memory_utilization 0.9 of the whole card for weights, the profiled
                activation peak and the KV cache (docs.vllm.ai, engine args); the profile runs
                max_num_batched_tokens = 8192 and max_num_seqs = 1024 on cards of 70 GiB or
                more that are not A100s, 2048 and 256 otherwise (vllm/engine/arg_utils.py,
                get_batch_defaults, OpenAI server); CUDA graphs are captured after the KV pool
                and come out of the 10%.
      SGLang    mem_fraction_static of the card for weights and KV: 0.88 at TP1, 0.87 TP2,
                0.85 TP4, 0.83 TP8, 0.79 TP16 (python/sglang/srt/server_args.py,
                __post_init__); chunked_prefill_size 8192 on large cards.
      TensorRT-LLM  kv_cache_free_gpu_mem_fraction 0.9 of the memory left free after the
                weights and the activations of max_num_tokens = 8192, at most max_batch_size
                = 2048 requests (LLM API defaults; useful-runtime-flags.md; the perf-overview
                tables use 0.95 "in many cases").
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
# SGLang sizes max_running_requests from the KV pool: memory is the only bound.
MAX_RUNNING_UNBOUNDED = 65536


@dataclass(frozen=True)
class Engine:
    """How one serving engine admits requests and holds memory back."""

    name: str
    reserve: str  # "full" | "mean": the KV context a running request holds
    # Share of memory its pools may take: of the whole card ("card") or of what the weights
    # and activations leave free ("free", TensorRT-LLM).
    memory_fraction: float
    fraction_of: str
    profile_tokens: int  # tokens of the activation-profiling forward (large cards)
    profile_tokens_small: int  # the same on cards below 70 GiB
    mixed_prefill: bool  # prompt chunks ride in decode steps (chunked prefill / in-flight)
    max_batch: int  # running requests the scheduler allows per replica (large cards)
    max_batch_small: int  # the same below 70 GiB (or on A100, for vLLM)
    source: str
    memory_flag: str  # the launch setting that sets `memory_fraction`
    release: str  # the release whose defaults this table holds
    # MoE: the second expert GEMM adds each token's k outputs in its epilogue instead of a
    # separate reduction kernel reading k rows back (moeserve.expanded_row_bytes).
    fused_moe_finalize: bool = False

    def fraction(self, tp: int) -> float:
        """The default share; SGLang's depends on the TP degree."""
        if self.name != "sglang":
            return self.memory_fraction
        for ranks, share in ((16, 0.79), (8, 0.83), (4, 0.85), (2, 0.87)):
            if tp >= ranks:
                return share
        return self.memory_fraction

    def profiled_tokens(self, card_memory_bytes: float) -> int:
        large = card_memory_bytes >= 70 * GIB
        return self.profile_tokens if large else self.profile_tokens_small

    def token_budget(self, card_memory_bytes: float, card_id: str) -> int:
        """Tokens one scheduler step may compute (vLLM's max_num_batched_tokens, SGLang's
        chunked_prefill_size, TensorRT-LLM's max_num_tokens): vLLM's defaults come in pairs
        with its running cap, chosen by the same card rule; the others by memory alone."""
        if self.max_batch == self.max_batch_small:
            return self.profiled_tokens(card_memory_bytes)
        if self.batch_cap(card_memory_bytes, card_id) == self.max_batch:
            return self.profile_tokens
        return self.profile_tokens_small

    def batch_cap(self, card_memory_bytes: float, card_id: str) -> int:
        """vLLM's larger defaults apply to cards of 70 GiB or more that are not A100s."""
        large = card_memory_bytes >= 70 * GIB and not card_id.startswith("a100")
        return self.max_batch if large else self.max_batch_small


# The releases the tables were read from. vLLM: the V1 engine's batch defaults by card, 1024
# sequences and 8192 tokens on cards of 70 GiB or more that are not A100s, 256 and 2048
# otherwise, since vllm-project/vllm PR #16158 (merged 2025-04-07; the card rule as Ray's
# PR #55159 quotes arg_utils.py on 2025-08-01); a later release raised the token budget to
# 16384 (ROCm/MAD PR #235, 2026-08-26: "VLLM now defaults to 16384"), which this table does not
# hold. SGLang and TensorRT-LLM: the releases of the sources cited in their entries (the
# TensorRT-LLM perf-overview tables are "v1.0"; SGLang's TP-stepped mem_fraction_static is
# the 0.4 series' server_args.py, an estimate of the range).
VLLM_RELEASE = "V1 of 2025-04 (PR #16158), before the 16384-token budget"
SGLANG_RELEASE = "0.4 series (estimate)"
TRTLLM_RELEASE = "1.0"

ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        name="vllm",
        reserve="mean",
        memory_fraction=0.9,
        fraction_of="card",
        profile_tokens=8192,
        profile_tokens_small=2048,
        mixed_prefill=True,
        max_batch=1024,
        max_batch_small=256,
        source="vLLM engine args: gpu_memory_utilization 0.9, max_num_batched_tokens 8192/2048",
        memory_flag="--gpu-memory-utilization",
        release=VLLM_RELEASE,
    ),
    "sglang": Engine(
        name="sglang",
        reserve="mean",
        memory_fraction=0.88,
        fraction_of="card",
        profile_tokens=8192,
        profile_tokens_small=2048,
        mixed_prefill=False,
        max_batch=MAX_RUNNING_UNBOUNDED,
        max_batch_small=MAX_RUNNING_UNBOUNDED,
        source="SGLang server_args: mem_fraction_static 0.88-0.79 by TP, chunked prefill 8192",
        memory_flag="--mem-fraction-static",
        release=SGLANG_RELEASE,
    ),
    "trtllm": Engine(
        name="trtllm",
        reserve="full",
        memory_fraction=0.9,
        fraction_of="free",
        profile_tokens=8192,
        profile_tokens_small=8192,
        mixed_prefill=True,
        max_batch=2048,
        max_batch_small=2048,
        source="TensorRT-LLM: GUARANTEED_NO_EVICT, kv_cache_free_gpu_mem_fraction 0.9, "
        "max_num_tokens 8192",
        memory_flag="--kv_cache_free_gpu_mem_fraction",
        release=TRTLLM_RELEASE,
        # `use_fused_finalize_` is on unless deterministic kernels or LoRA are asked for
        # (cpp/tensorrt_llm/plugins/mixtureOfExperts/mixtureOfExpertsPlugin.cpp).
        fused_moe_finalize=True,
    ),
}
# Without a stated engine the plan sizes for vLLM, the most widely deployed open engine.
DEFAULT_ENGINE = "vllm"
# What CUDA-graph capture holds per GPU, bytes. Estimate: vLLM logs "Graph capturing finished
# in N secs, took X GiB" at start-up; 0.5-1.5 GiB is usual for 8B-70B dense models over the
# default capture sizes (up to 512 sequences). 1 GiB is charged, stated as an estimate.
CUDA_GRAPH_BYTES = 1.0 * GIB


def engine_named(name: str | None) -> Engine:
    """The engine of `name` or `name@release` (the release is checked against the table's by
    `release_note`)."""
    return ENGINES[(name or DEFAULT_ENGINE).split("@")[0]]


def release_note(name: str | None) -> str:
    """Which release's defaults size the batch, and a warning where another was asked for."""
    engine = engine_named(name)
    asked = (name or "").partition("@")[2]
    said = f"engine {engine.name}, defaults of release {engine.release}"
    if not name:
        return f"{said} (no engine given: {DEFAULT_ENGINE}, the most widely deployed open engine)"
    if asked and asked != engine.release:
        return (
            f"warning: {name} asked, but gpusolve holds {engine.name}'s defaults of release "
            f"{engine.release} only; they size the batch (check {engine.memory_flag}, the "
            "batch caps and chunked prefill of the release you run)"
        )
    return said


def reserved_context(reserve: str, prompt: float, output: float) -> float:
    """KV tokens one running request holds against the pool under `reserve`."""
    return prompt + output if reserve == "full" else prompt + output / 2
