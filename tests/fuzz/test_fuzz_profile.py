"""Generated hostile nvidia-smi logs for `gpusolve profile` (hypothesis), in-process.

The logs are not YAML, so they get their own mutations: a field replaced by a hostile token
(a huge or negative number, NaN, a word), a header line dropped, duplicated or moved below
the data, a line cut short, control characters and NUL bytes, a BOM, a truncated file. Every
case keeps `tests.support.fuzz.check_outcome`'s contract. A log that is only ever read (never
solved) must also answer quickly: the per-case limit is that of every other kind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.fuzz import ROOT, check_outcome, run_cli, write_case

SCALE = float(os.environ.get("GPUSOLVE_FUZZ_SCALE", "1"))
CASES = 300
LOGS = sorted((ROOT / "tests" / "data" / "dmon").glob("*.[lc]*[gv]"))
TEXTS = {path.name: path.read_text(encoding="utf-8") for path in LOGS}
TOKENS = ["-1", "1e300", "-1e300", "nan", "inf", "9" * 40, "0x10", "苏南", "", "N/A", "-", "%"]
CONTROL = ["\x00", "\x01", "\x1b", "\x7f", "\ufeff", "\u2028"]
_FOLDER = Path(tempfile.mkdtemp(prefix="gpusolve-fuzz-profile-"))


@st.composite
def hostile_log(draw: st.DrawFn) -> tuple[str, str | bytes, str]:
    """(file name, content, what was done)."""
    name = draw(st.sampled_from(sorted(TEXTS)))
    lines = TEXTS[name].splitlines(keepends=True)
    i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    how = draw(st.sampled_from(["token"] * 4 + ["drop", "dup", "move", "cut", "ctrl", "bom"]))
    if how == "token":
        sep = "," if name.endswith(".csv") else None
        fields = lines[i].rstrip("\n").split(sep)
        j = draw(st.integers(min_value=0, max_value=max(0, len(fields) - 1)))
        fields[j] = draw(st.sampled_from(TOKENS) | st.text(max_size=6))
        lines[i] = ("," if sep else " ").join(fields) + "\n"
        what = f"{name}: line {i + 1} field {j} = {fields[j]!r}"
    elif how == "drop":
        what = f"{name}: line {i + 1} dropped"
        del lines[i]
    elif how == "dup":
        lines.insert(i, lines[i])
        what = f"{name}: line {i + 1} duplicated"
    elif how == "move":
        lines.append(lines.pop(i))
        what = f"{name}: line {i + 1} moved to the end"
    elif how == "cut":
        cut = draw(st.integers(min_value=0, max_value=len(lines[i])))
        lines = [*lines[:i], lines[i][:cut]]
        what = f"{name}: truncated in line {i + 1} at {cut}"
    elif how == "ctrl":
        char = draw(st.sampled_from(CONTROL))
        at = draw(st.integers(min_value=0, max_value=len(lines[i])))
        lines[i] = lines[i][:at] + char + lines[i][at:]
        what = f"{name}: {char!r} in line {i + 1}"
    else:
        return name, b"\xef\xbb\xbf" + "".join(lines).encode(), f"{name}: BOM"
    return name, "".join(lines), what


@settings(
    max_examples=max(1, int(CASES * SCALE)),
    deadline=None,
    derandomize=SCALE <= 1,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(case=hostile_log())
def test_fuzz_profile_logs(case: tuple[str, str | bytes, str]) -> None:
    name, content, what = case
    path = write_case(_FOLDER, name, content)
    for fmt in ("text", "json"):
        outcome = run_cli("profile", str(path), "--format", fmt)
        try:
            check_outcome(outcome)
        except AssertionError as exc:
            raise AssertionError(f"case: {what}\n{exc}") from None


def test_the_shipped_logs_are_read() -> None:
    """The bases themselves profile cleanly: a harness whose every case fails at the parser
    would test nothing past it."""
    assert len(LOGS) >= 3
    for path in LOGS:
        outcome = run_cli("profile", str(path))
        check_outcome(outcome)
        assert outcome.code == 0, outcome.describe()
