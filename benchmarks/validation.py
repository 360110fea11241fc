"""Print the physics' residuals against published results (tests/support/validation_cases.py).

    python benchmarks/validation.py            # the residual table, one row per case
    python benchmarks/validation.py --fit      # sweep each family's GEMM_SHAPES (own rows)
    python benchmarks/validation.py --markdown # the table as Markdown (benchmarks/README.md)

Exit status 1 when any case is outside its tolerance (the same check as
tests/test_validation.py).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "solver"))

from tests.support.validation_cases import Case, all_cases  # noqa: E402
from tests.support.validation_finetune import finetune_cases  # noqa: E402
from tests.support.validation_serving import serving_cases  # noqa: E402


def _rows(cases: list[Case]) -> list[tuple[Case, float, float]]:
    out = []
    for c in cases:
        got = c.predict()
        out.append((c, got, got / c.published - 1.0))
    return out


def _table(rows: list[tuple[Case, float, float]], markdown: bool) -> str:
    lines: list[str] = []
    if markdown:
        lines.append("| group | case | published | predicted | unit | residual | tolerance |")
        lines.append("|---|---|---:|---:|---|---:|---:|")
    group = None
    for c, got, res in rows:
        mark = "" if abs(res) <= c.tolerance else ("  << OUT" if c.gated else "  (outside)")
        if markdown:
            lines.append(
                f"| {c.group} | {c.name} | {c.published:,.4g} | {got:,.4g} | {c.unit} | "
                f"{res:+.1%} | ±{c.tolerance:.0%} |"
            )
            continue
        if c.group != group:
            group = c.group
            lines.append(f"\n{group}")
        lines.append(
            f"  {c.name:<34} {c.published:>10,.4g} {got:>10,.4g} {c.unit:<12} "
            f"{res:+7.1%}  (±{c.tolerance:.0%}){mark}"
        )
    return "\n".join(lines)


def _fit(cases: list[Case]) -> None:
    """Sweep each family's GEMM_SHAPES over that family's fitted cases alone."""
    import gpusolve.estimate.efficiency as efficiency
    import gpusolve.estimate.steptime as steptime

    for family in sorted({c.family for c in cases if c.fitted_on}):
        fitted = [c for c in cases if c.fitted_on and c.family == family]
        original = efficiency.GEMM_SHAPES.get(family)
        print(f"{family}: sweeping GEMM_SHAPES over {len(fitted)} fitted cases (now {original})")
        best: tuple[float, float] | None = None
        for step in range(60, 101, 2):
            value = step / 100
            efficiency.GEMM_SHAPES[family] = value
            steptime._training_step.cache_clear()
            logs = [math.log(c.predict() / c.published) for c in fitted]
            rms = math.sqrt(sum(x * x for x in logs) / len(logs))
            worst = max(abs(x) for x in logs)
            print(f"  {value:.2f}: rms log residual {rms:.3f}, worst {math.expm1(worst):.1%}")
            if best is None or rms < best[1]:
                best = (value, rms)
        if original is None:
            del efficiency.GEMM_SHAPES[family]
        else:
            efficiency.GEMM_SHAPES[family] = original
        steptime._training_step.cache_clear()
        assert best is not None
        print(f"{family}: least squares (log residuals): {best[0]:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="sweep the fitted parameter")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    cases = all_cases() + serving_cases() + finetune_cases()
    if args.fit:
        _fit(cases)
        return 0
    rows = _rows(cases)
    print(_table(rows, args.markdown))
    out = [c for c, _, r in rows if c.gated and abs(r) > c.tolerance]
    gated = [r for r in rows if r[0].gated]
    worst = max(gated, key=lambda r: abs(r[2]) / r[0].tolerance)
    checks = [r for r in rows if not r[0].gated]
    inside = sum(abs(r[2]) <= r[0].tolerance for r in checks)
    print(
        f"\n{len(gated)} validation cases, {len(out)} outside tolerance; largest relative to its "
        f"tolerance: {worst[0].group} / {worst[0].name} {worst[2]:+.1%}\n"
        f"{len(checks)} cross-checks (not fitted, not gated), {inside} within tolerance"
    )
    if not args.markdown:
        print("cross-check assumptions:")
        for c in {c.group: c for c, _, _ in checks}.values():
            print(f"  {c.group}: {c.assumption}")
    return 1 if out else 0


if __name__ == "__main__":
    raise SystemExit(main())
