"""Seeded draws and percentiles for the request-rate simulation (`loadsim.py`), in plain
Python: the estimate package imports no numerical library (pure physics, fast to load).

Uniforms come from SplitMix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number
Generators", OOPSLA 2014; the generator of Java's SplittableRandom), 53 bits each; exponential
gaps by inversion, normal draws by Box-Muller, so the same seed gives the same requests on
every machine and Python version.
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


class SplitMix64:
    """A seeded stream of uniforms in (0, 1]."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next_u64(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        """In (0, 1]: never 0, so its logarithm is finite."""
        return ((self.next_u64() >> 11) + 1) * 2.0**-53

    def exponential(self, mean: float) -> float:
        return -mean * math.log(self.uniform())

    def normal(self) -> float:
        u, v = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(u)) * math.cos(2.0 * math.pi * v)


def arrivals(rng: SplitMix64, rate: float, n: int, poisson: bool) -> list[float]:
    """Arrival times of `n` requests at `rate` per second, the first at t = 0 (vLLM's
    benchmark sends the first request at once, then sleeps an exponential gap)."""
    times = [0.0]
    for _ in range(n - 1):
        times.append(times[-1] + (rng.exponential(1.0 / rate) if poisson else 1.0 / rate))
    return times


def lognormal(rng: SplitMix64, mean: float, stdev: float, n: int) -> list[int]:
    """`n` lengths with this mean and standard deviation (log-normal: never negative, a long
    right tail), rounded to whole tokens, at least 1."""
    if stdev <= 0 or mean <= 0:
        return [max(1, round(mean))] * n
    sigma2 = math.log1p((stdev / mean) ** 2)
    mu, sigma = math.log(mean) - sigma2 / 2, math.sqrt(sigma2)
    return [max(1, round(math.exp(mu + sigma * rng.normal()))) for _ in range(n)]


def from_histogram(rng: SplitMix64, bins: list[tuple[int, float]], n: int) -> list[int]:
    """`n` lengths, each bin's with probability weight / total (inverse of the cumulative)."""
    total = sum(w for _, w in bins)
    out = []
    for _ in range(n):
        u, seen = rng.uniform() * total, 0.0
        pick = bins[-1][0]
        for tokens, weight in bins:
            seen += weight
            if u <= seen:
                pick = tokens
                break
        out.append(pick)
    return out


def percentiles(values: list[float], qs: tuple[int, ...] = (50, 90, 99)) -> tuple[float, ...]:
    """Percentiles by linear interpolation between order statistics (numpy's default),
    NaN left out; a percentile that reaches an infinite value is infinite; NaN when empty."""
    kept = sorted(v for v in values if not math.isnan(v))
    if not kept:
        return tuple(math.nan for _ in qs)
    out = []
    for q in qs:
        pos = (len(kept) - 1) * q / 100.0
        lo = math.floor(pos)
        hi = min(lo + 1, len(kept) - 1)
        a, b = kept[lo], kept[hi]
        if math.isinf(a) or math.isinf(b):
            out.append(math.inf if pos > lo or math.isinf(a) else a)
            continue
        out.append(a + (b - a) * (pos - lo))
    return tuple(out)
