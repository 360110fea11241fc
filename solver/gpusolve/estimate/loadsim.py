"""A serving engine's scheduler under a request rate: a small deterministic discrete-event
simulation of continuous batching on one replica.

The model (vLLM V1's scheduler, vllm/v1/core/sched/scheduler.py `schedule`: one token budget
per step, the running requests scheduled first, then the waiting ones):
  * requests arrive at the replica's rate, Poisson (vLLM's `benchmark_serving.py` draws the
    gaps from an exponential distribution; the first request at t = 0) or evenly spaced;
    prompt and output lengths are drawn per request (`Requests`), seeded, so a run is the
    same every time;
  * every engine step gives each running request that has its prompt one decode token, then
    spends what is left of the step's token budget (vLLM's max_num_batched_tokens, SGLang's
    chunked_prefill_size) on prompt chunks: first the requests part-way through their prompt,
    then waiting requests in arrival order (first come, first served: a request whose chunk's
    KV blocks are not free stops admission, the ones behind it wait) while the running count
    is below the engine's cap (max_num_seqs);
  * the KV cache holds `kv_tokens` tokens. Paged engines (vLLM, SGLang) take blocks as tokens
    are computed; when a step's decodes find no free slot, the most recently admitted request
    is preempted, its blocks freed, and it goes back to the head of the queue to recompute
    its prompt and the tokens it had generated ("In vLLM V1, the default preemption mode is
    RECOMPUTE rather than SWAP", docs.vllm.ai, Optimization and Tuning, Preemption). An engine
    that reserves the whole request at admission (TensorRT-LLM's GUARANTEED_NO_EVICT) admits
    only what fits prompt + output and never preempts;
  * engines that do not mix prompt chunks into decode steps (SGLang's default) run a prefill
    step whenever a prompt chunk can be scheduled, else a decode step;
  * a step takes `StepCost`'s time for its rows (decode tokens + prompt tokens), the KV it
    reads and its prompt attention: the per-step time model of `serving.py`, unchanged;
  * the step that computes a prompt's last token also samples its first output token (TTFT =
    that step's end - arrival); TPOT = (finish - first token) / (output - 1), per request, as
    the benchmarks define it.
Between events (an arrival that could be admitted, a completion, a full cache) decode steps
are identical but for the growing KV, so they are taken in one stride (closed form), which
keeps a run of 1,000 requests to a few thousand scheduler iterations.

Limits: block granularity (16-token pages), prefix caching, speculative decoding, the CPU's
share of a step (scheduling, detokenisation, the HTTP server) and the client's network are
not modelled; SGLang admits on the tokens known now (its new_token_ratio reserve is not
modelled); pipeline stages run a step's requests as micro-batches of rows / p each (one
request's prompt chunk stays whole), with no term for a multi-node executor's hand-offs
beyond the link's latency; a replica of a several-replica service sees its share of the
arrivals, each thinned at random (Poisson with rate / replicas), not round-robin. A request
whose prompt alone exceeds the cache is refused (infinite TTFT).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

# The simulation draws from this seed unless told otherwise: the same inputs give the
# same percentiles on every run.
DEFAULT_SEED = 0
# Requests per simulated replica: enough for a P99 of 10 requests (1%), and vLLM's
# benchmark_serving.py default --num-prompts.
DEFAULT_REQUESTS = 1000


@dataclass(frozen=True)
class Requests:
    """Arrival times (s, ascending) and lengths (tokens) of the requests one replica serves."""

    arrival_s: list[float]
    prompt: list[int]
    output: list[int]

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass(frozen=True)
class Scheduler:
    """What the engine's scheduler allows per replica."""

    token_budget: int  # decode + prompt tokens per step
    max_running: int  # requests decoding or prefilling at once
    kv_tokens: int  # KV cache capacity, tokens
    mixed: bool = True  # prompt chunks ride in decode steps
    reserve_full: bool = False  # admission reserves prompt + output (no preemption)


@dataclass(frozen=True)
class StepCost:
    """One engine step's time: `stage_s(rows)` for one pipeline stage's GEMMs, all-reduces,
    elementwise kernels and launch gaps over `rows` tokens, plus `kv_s` per KV token the
    decodes read and `attention_s` per unit of prompt attention (chunk tokens x their mean
    position). With `stages` > 1 the step's requests are split into micro-batches that follow
    each other through the stages (rows / stages each), but one request's prompt chunk stays
    in one micro-batch, which every stage runs in turn; `hop_s` is the stages' hand-offs."""

    stage_s: Callable[[int], float]
    kv_s: float
    attention_s: float
    stages: int = 1
    hop_s: float = 0.0

    def fixed_s(self, rows: int, largest_chunk: int = 0) -> float:
        micro = max(math.ceil(rows / self.stages), largest_chunk)
        return self.stages * self.stage_s(micro) + self.hop_s

    def step_s(
        self, rows: int, kv_tokens: float, attention: float, largest_chunk: int = 0
    ) -> float:
        return (
            self.fixed_s(rows, largest_chunk)
            + self.kv_s * kv_tokens
            + self.stages * self.attention_s * attention
        )


@dataclass
class SimResult:
    """Per-request outcomes (s; inf where a request was refused) and what the run saw."""

    ttft_s: list[float]
    tpot_s: list[float]  # nan where a request has a single output token
    finish_s: list[float]
    duration_s: float  # first arrival to last completion (the benchmarks' duration)
    steady_rps: float  # completions per second over the second half of the arrivals
    steps: int
    preemptions: int
    refused: int
    mean_running: float


@dataclass(frozen=True)
class LoadFigures:
    """What one replica's simulated requests saw at the service's request rate."""

    request_rate: float  # requests/s offered to the whole service
    replicas: int  # replicas the rate is split over
    requests: int  # simulated on one replica
    arrivals: str  # poisson | constant
    ttft_s: tuple[float, float, float]  # P50, P90, P99 (queueing included)
    tpot_s: tuple[float, float, float]
    throughput_rps: float  # completed requests/s over all replicas (the benchmarks' figure)
    steady_rps: float  # completed requests/s over all replicas while requests arrived
    goodput_rps: float | None  # requests/s meeting every target (None: no SLA stated)
    mean_running: float  # requests in the replica's batch on average
    preemptions: int
    refused: int  # requests whose prompt alone exceeds the KV cache
    kv_tokens: int  # the replica's KV cache, tokens
    misses: tuple[str, ...] = ()  # the SLA's targets the percentiles miss, as sentences

    @property
    def meets_sla(self) -> bool:
        return not self.misses

    @property
    def saturated(self) -> bool:
        """Requests complete slower than they arrive (by more than the sample's noise)."""
        return any("grow without bound" in m for m in self.misses) or (
            self.steady_rps < 0.9 * self.request_rate
        )


@dataclass
class _State:
    """The replica's queues and each request's progress (indices into `Requests`)."""

    prompt: list[int]
    output: list[int]
    need: list[int]  # prompt tokens to compute (prompt + generated after a preemption)
    done: list[int]  # of those, computed
    gen: list[int]  # output tokens sampled
    held: list[int]  # KV tokens held against the cache (the whole request if reserved)
    ctx: list[int]  # KV tokens written: what a decode step reads
    first: list[float]
    finish: list[float]
    free: int
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)  # the head first
    finished: int = 0
    preemptions: int = 0
    refused: int = 0


def simulate(reqs: Requests, sched: Scheduler, cost: StepCost) -> SimResult:
    """Serve `reqs` on one replica; see the module docstring for the model."""
    n = len(reqs)
    st = _State(
        prompt=[int(x) for x in reqs.prompt],
        output=[int(x) for x in reqs.output],
        need=[int(x) for x in reqs.prompt],
        done=[0] * n,
        gen=[0] * n,
        held=[0] * n,
        ctx=[0] * n,
        first=[math.nan] * n,
        finish=[math.nan] * n,
        free=sched.kv_tokens,
    )
    t, arrived, steps, busy = 0.0, 0, 0, 0.0
    while st.finished < n:
        while arrived < n and reqs.arrival_s[arrived] <= t:
            st.waiting.append(arrived)
            arrived += 1
        if not st.running and not st.waiting:
            t = float(reqs.arrival_s[arrived])
            continue
        _refuse_oversized(st, sched)
        if not st.running and not st.waiting:
            continue
        next_arrival = float(reqs.arrival_s[arrived]) if arrived < n else math.inf
        load = len(st.running)
        stride = _decode_stride(st, sched, cost, t, next_arrival)
        if stride is not None:
            k, elapsed = stride
            steps += k
        else:
            elapsed = _step(st, sched, cost, t)
            steps += 1
        busy += elapsed * load
        t += elapsed
    pairs = zip(st.first, reqs.arrival_s, strict=True)
    ttft = [f - a if not math.isnan(f) else math.inf for f, a in pairs]
    tpot = [
        (end - first) / (out - 1) if out > 1 and not math.isnan(end) else math.nan
        for end, first, out in zip(st.finish, st.first, st.output, strict=True)
    ]
    done = [f for f in st.finish if not math.isnan(f)]
    duration = max(done) if done else 0.0
    steady = _steady_rps(reqs.arrival_s, st.finish)
    return SimResult(
        ttft_s=ttft,
        tpot_s=tpot,
        finish_s=st.finish,
        duration_s=duration,
        steady_rps=steady,
        steps=steps,
        preemptions=st.preemptions,
        refused=st.refused,
        mean_running=busy / t if t > 0 else 0.0,
    )


def _steady_rps(arrival: list[float], finish: list[float]) -> float:
    """Completions per second over the second half of the arrivals (the first half fills an
    empty replica): below the arrival rate, the queue grows as long as requests come."""
    window = arrival[-1]
    if window <= 0:
        return math.inf
    late = sum(1 for f in finish if window / 2 < f <= window)
    return late / (window / 2)


def _admissible(st: _State, sched: Scheduler, budget: int, slots: int) -> bool:
    """Whether the head of the queue could start this step with `budget` tokens and `slots`
    free KV tokens left."""
    if not st.waiting or budget <= 0 or len(st.running) >= sched.max_running:
        return False
    i = st.waiting[0]
    if sched.reserve_full:
        return st.need[i] + st.output[i] - st.gen[i] <= slots
    return min(st.need[i], budget) <= slots


def _decode_stride(
    st: _State,
    sched: Scheduler,
    cost: StepCost,
    t: float,
    next_arrival: float,
) -> tuple[int, float] | None:
    """(steps, seconds) of identical decode steps taken at once, or None when this step
    must be scheduled in full (a prompt chunk to run, a preemption due)."""
    running = st.running
    if not running or any(st.done[i] < st.need[i] for i in running):
        return None
    n = len(running)
    if sched.mixed and n > sched.token_budget:
        return None
    per_step_slots = 0 if sched.reserve_full else n
    if sched.mixed:
        prefill_budget, slots = sched.token_budget - n, st.free - per_step_slots
    else:
        prefill_budget, slots = sched.token_budget, st.free
    if _admissible(st, sched, prefill_budget, slots):
        return None
    k = min(st.output[i] - st.gen[i] for i in running)
    if per_step_slots:
        k = min(k, st.free // per_step_slots)
    if k < 1:
        return None
    fixed = cost.fixed_s(n)
    kv0 = float(sum(st.ctx[i] for i in running))
    growth = cost.kv_s * n
    if not st.waiting and next_arrival < math.inf:
        # The step during which the next request arrives is the last of the stride: the
        # step after it may admit that request.
        k = min(k, _steps_to_reach(next_arrival - t, fixed + cost.kv_s * kv0, growth))
    elapsed = k * (fixed + cost.kv_s * kv0) + growth * k * (k - 1) / 2
    for i in running:
        st.gen[i] += k
        st.ctx[i] += k
        if per_step_slots:
            st.held[i] += k
    st.free -= per_step_slots * k
    end = t + elapsed
    for i in [i for i in running if st.gen[i] >= st.output[i]]:
        _finish(st, i, end)
    return k, elapsed


def _steps_to_reach(span: float, first: float, growth: float) -> int:
    """The fewest steps (first step `first` s, each `growth` s longer than the one before)
    whose total reaches `span` (at least 1)."""
    if span <= 0:
        return 1
    if growth <= 0:
        return max(1, math.ceil(span / first))
    # k·first + growth·k(k-1)/2 >= span
    a, b = growth / 2, first - growth / 2
    return max(1, math.ceil((-b + math.sqrt(b * b + 4 * a * span)) / (2 * a)))


def _preempt_latest(st: _State) -> None:
    """Preempt the latest admission: its KV freed, back to the head of the queue to
    recompute its prompt and the tokens it has generated."""
    victim = st.running.pop()
    st.free += st.held[victim]
    st.held[victim] = 0
    st.ctx[victim] = 0
    st.need[victim] = st.prompt[victim] + st.gen[victim]
    st.done[victim] = 0
    st.waiting.insert(0, victim)
    st.preemptions += 1


def _decoders(st: _State) -> list[int]:
    return [i for i in st.running if st.done[i] >= st.need[i]]


def _refuse_oversized(st: _State, sched: Scheduler) -> None:
    """Refuse the head of the queue while it alone cannot fit the cache (its prompt, or
    prompt + output where the whole request is reserved)."""
    while st.waiting:
        i = st.waiting[0]
        size = st.need[i] + (st.output[i] - st.gen[i] if sched.reserve_full else 1)
        if size <= sched.kv_tokens:
            return
        st.waiting.pop(0)
        st.first[i] = math.inf
        st.refused += 1
        st.finished += 1


def _step(
    st: _State,
    sched: Scheduler,
    cost: StepCost,
    t: float,
) -> float:
    """Schedule and run one engine step at time `t`; returns its duration."""
    decoders = _decoders(st)
    if not sched.reserve_full:
        while st.running and st.free < len(decoders):
            _preempt_latest(st)
            decoders = _decoders(st)
    if sched.mixed:
        decoders = decoders[: sched.token_budget]
        kv_read = _take_decode_slots(st, sched, decoders)
        chunks = _prompt_chunks(st, sched, sched.token_budget - len(decoders))
    else:
        # A prefill step of its own whenever a prompt chunk can run, else a decode step.
        chunks = _prompt_chunks(st, sched, sched.token_budget)
        decoders = [] if chunks else decoders
        kv_read = _take_decode_slots(st, sched, decoders)
    if not decoders and not chunks:
        if st.running:
            _preempt_latest(st)  # every running prompt waits for cache: free the latest
        return 0.0
    rows = len(decoders) + sum(c for _, c in chunks)
    attention = sum(c * (float(st.done[i]) + c / 2) for i, c in chunks)
    largest = max((c for _, c in chunks), default=0)
    elapsed = cost.step_s(rows, kv_read, attention, largest)
    end = t + elapsed
    for i in decoders:
        st.gen[i] += 1
    for i, c in chunks:
        st.done[i] += c
        if st.done[i] >= st.need[i]:
            st.gen[i] += 1
            if math.isnan(st.first[i]):
                st.first[i] = end
    for i in [i for i in _decoders(st) if st.gen[i] >= st.output[i]]:
        _finish(st, i, end)
    return elapsed


def _take_decode_slots(st: _State, sched: Scheduler, decoders: list[int]) -> float:
    """KV tokens the decodes read this step; paged engines write each new token's KV."""
    kv_read = float(sum(st.ctx[i] for i in decoders))
    for i in decoders:
        st.ctx[i] += 1
    if not sched.reserve_full:
        for i in decoders:
            st.held[i] += 1
        st.free -= len(decoders)
    return kv_read


def _prompt_chunks(st: _State, sched: Scheduler, budget: int) -> list[tuple[int, int]]:
    """(request, tokens) of prompt to compute this step: the running requests part-way
    through their prompt first, then the queue in order; KV taken as it is scheduled."""
    chunks: list[tuple[int, int]] = []
    for i in st.running:
        if budget <= 0:
            return chunks
        left = st.need[i] - st.done[i]
        if left <= 0:
            continue
        c = min(left, budget)
        if not sched.reserve_full and c > st.free:
            return chunks  # its chunk's blocks are not free: it waits a step
        chunks.append((i, c))
        budget -= c
        st.ctx[i] += c
        if not sched.reserve_full:
            st.free -= c
            st.held[i] += c
    while _admissible(st, sched, budget, st.free):
        i = st.waiting.pop(0)
        if sched.reserve_full:
            reserve = st.need[i] + st.output[i] - st.gen[i]
            st.free -= reserve
            st.held[i] = reserve
            c = min(st.need[i], budget)
        else:
            c = min(st.need[i], budget)
            st.free -= c
            st.held[i] += c
        st.running.append(i)
        st.ctx[i] += c
        chunks.append((i, c))
        budget -= c
    return chunks


def _finish(st: _State, i: int, end: float) -> None:
    st.running.remove(i)
    st.free += st.held[i]
    st.held[i] = 0
    st.finish[i] = end
    st.finished += 1
