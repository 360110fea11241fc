"""The fuzzing harness: run gpusolve in-process on a hostile input and judge the outcome.

Every run must end with a documented exit code and a message; never a traceback, never
an internal error (exit 70), never a hang (a per-case wall-clock limit), and never exit 0
on nonsense. New commands and input kinds are rows in `KINDS` and `COMMANDS`; the corpus
(tests/corpus/) and the generated cases (test_fuzz_generated.py) both read them.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpusolve.cli import main

ROOT = Path(__file__).resolve().parents[2]

# Exit codes gpusolve documents (`gpusolve --help`, README). 3 comes with issue 21.
EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "no feasible plan (or no colocation offer can host the fleet)",
    2: "invalid input or usage",
    3: "no plan found within the time limit",
    130: "interrupted",
}

# Seconds one case may take before it counts as a hang. Loading and validating takes
# milliseconds; a valid document that reaches a solve runs with --time-limit 2.
CASE_LIMIT_S = float(os.environ.get("GPUSOLVE_FUZZ_CASE_LIMIT_S", "60"))


class Hang(Exception):
    """A case ran past CASE_LIMIT_S."""


@dataclass(frozen=True)
class Outcome:
    args: tuple[str, ...]
    code: int
    out: str
    err: str
    seconds: float

    def describe(self) -> str:
        return (
            f"gpusolve {' '.join(self.args)} -> exit {self.code} in {self.seconds:.1f} s\n"
            f"--- stderr ---\n{self.err[-3000:]}\n--- stdout ---\n{self.out[-1500:]}"
        )


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(*args: str, limit_s: float = CASE_LIMIT_S) -> Outcome:
    """The real console entry point, in-process (a subprocess per case would cost ~1 s)."""
    out, err = io.StringIO(), io.StringIO()
    began = time.perf_counter()
    code: int
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with _time_limit(limit_s):
                main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Outcome(tuple(args), code, out.getvalue(), err.getvalue(), time.perf_counter() - began)


def check_outcome(outcome: Outcome, *, nonsense: bool = False) -> None:
    """The contract every run keeps, whatever the input."""
    text = outcome.describe()
    assert "Traceback" not in outcome.err and "Traceback" not in outcome.out, text
    assert outcome.code in EXIT_CODES, f"undocumented exit code\n{text}"
    if outcome.code == 2:
        first = outcome.err.strip().splitlines()[0] if outcome.err.strip() else ""
        assert first.startswith(("error:", "Error:", "Usage:")), f"exit 2 without a message\n{text}"
    if outcome.code == 1:
        assert outcome.out.strip() or outcome.err.strip(), f"exit 1 without a reason\n{text}"
    control = [c for c in outcome.out + outcome.err if _is_control(c)]
    assert not control, f"control characters {sorted(set(control))!r} reach the terminal\n{text}"
    if nonsense:
        assert outcome.code != 0, f"exit 0 on nonsense\n{text}"


def _is_control(char: str) -> bool:
    """A character a terminal acts on rather than shows: C0 but tab and newline, DEL, C1."""
    code = ord(char)
    return (code < 32 and char not in "\n\t") or 0x7F <= code <= 0x9F


# --------------------------------------------------------------------------- input kinds


@dataclass(frozen=True)
class InputKind:
    """A kind of file users hand gpusolve, with valid documents to mutate and the commands
    that read it. `{}` in a command stands for the file."""

    name: str
    bases: tuple[Path, ...]
    cheap: tuple[str, ...]  # a command that loads and checks the file without solving
    full: tuple[tuple[str, ...], ...]  # every command that reads it, solves included
    # The top-level blocks the data mutations aim at (None: anywhere in the document). A
    # block of a larger file (scenarios:, finance:, patch:) would otherwise get a few of its
    # cases.
    focus: tuple[str, ...] | None = None


EXAMPLES = ROOT / "examples"
VALID = ROOT / "tests" / "corpus" / "valid"
FAST = ("--time-limit", "2")
REQS = str(EXAMPLES / "finetune-7b-deadline.yaml")
# Where --format html writes its report: one file, replaced by every case.
HTML_OUT = str(Path(tempfile.mkdtemp(prefix="gpusolve-fuzz-html-")) / "report.html")

KINDS: dict[str, InputKind] = {
    "requirements": InputKind(
        "requirements",
        tuple(sorted(EXAMPLES.glob("*.yaml"))),
        ("rules", "explain", "{}"),
        (
            ("plan", "-q", "{}", *FAST),
            ("plan", "-q", "{}", *FAST, "--bom"),
            ("plan", "-q", "{}", *FAST, "--format", "html", "-o", HTML_OUT),
            ("plan", "-q", "{}", *FAST, "--sensitivity"),
            ("estimate", "{}", "--card", "h100-sxm"),
            ("frontier", "-q", "{}", "--points", "2", *FAST),
            ("rules", "explain", "{}"),
        ),
    ),
    "catalogue": InputKind(
        "catalogue",
        tuple(sorted((ROOT / "catalog").glob("*.yaml"))),
        # A mutated copy of a shipped file restates the shipped ids, so it replaces the
        # shipped catalogue (--no-default-catalog) rather than adding to it.
        ("catalog", "validate", "--no-default-catalog", "{}"),
        (
            ("catalog", "validate", "--no-default-catalog", "{}"),
            ("catalog", "validate", "{}"),
            ("catalog", "list", "--no-default-catalog", "--catalog", "{}"),
            (
                "plan",
                "-q",
                str(EXAMPLES / "finetune-7b-deadline.yaml"),
                "--no-default-catalog",
                "--catalog",
                "{}",
                *FAST,
            ),
            (
                "colo",
                str(EXAMPLES / "fleets" / "h100-training-cluster.yaml"),
                "--no-default-catalog",
                "--catalog",
                "{}",
            ),
        ),
    ),
    "rules": InputKind(
        "rules",
        (ROOT / "tests" / "corpus" / "valid" / "rules-user.yaml",),
        ("rules", "check", "{}"),
        (
            ("rules", "check", "{}"),
            ("rules", "explain", str(EXAMPLES / "finetune-7b-deadline.yaml"), "--rules", "{}"),
            ("plan", "-q", str(EXAMPLES / "finetune-7b-deadline.yaml"), "--rules", "{}", *FAST),
        ),
    ),
    "fleet": InputKind(
        "fleet",
        tuple(sorted((EXAMPLES / "fleets").glob("*.yaml"))),
        ("colo", "{}"),
        (("colo", "{}"), ("colo", "{}", "--format", "json")),
    ),
}


# Blocks of a larger input, each fuzzed on its own (issue 39). An input block that lands
# later (periods:, engines:) is one more row: a valid base document holding the block
# (tests/corpus/valid/ or an example), the block's key, a cheap command and the commands
# that read it; give it cases in test_fuzz_generated.CHEAP_CASES.
BLOCKS: dict[str, InputKind] = {
    "scenarios": InputKind(
        "scenarios",
        (EXAMPLES / "scenarios-demand-growth.yaml",),
        ("rules", "explain", "{}"),
        (("plan", "-q", "{}", *FAST),),
        focus=("scenarios",),
    ),
    "finance": InputKind(
        "finance",
        (VALID / "requirements-finance.yaml",),
        ("rules", "explain", "{}"),
        (("plan", "-q", "{}", *FAST), ("plan", "-q", "{}", *FAST, "--bom")),
        focus=("finance",),
    ),
    "inventory": InputKind(
        "inventory",
        (EXAMPLES / "owned-a800-what-to-add.yaml",),
        ("rules", "explain", "{}"),
        (("plan", "-q", "{}", *FAST),),
        focus=("owned",),
    ),
    "patch": InputKind(
        "patch",
        (VALID / "catalog-patch.yaml",),
        ("catalog", "validate", "{}"),
        (("plan", "-q", REQS, "--catalog", "{}", *FAST),),
        focus=("patch",),
    ),
    # Demand over periods and the yearly capex: the workloads' timing and growth, the
    # budget, the periods themselves.
    "phased": InputKind(
        "phased",
        (VALID / "requirements-phased.yaml",),
        ("rules", "explain", "{}"),
        (("plan", "-q", "{}", *FAST),),
        focus=("workloads", "budget", "periods"),
    ),
}
KINDS.update(BLOCKS)


def command_for(template: tuple[str, ...], path: Path) -> tuple[str, ...]:
    return tuple(str(path) if part == "{}" else part for part in template)


# --------------------------------------------------------------------------- mutations

JsonPath = tuple[str | int, ...]


def leaf_paths(data: Any, prefix: JsonPath = ()) -> list[JsonPath]:
    """Every position in a document (mappings, lists and scalars), root excluded."""
    found: list[JsonPath] = []
    items: Iterator[tuple[str | int, Any]]
    if isinstance(data, dict):
        items = iter(data.items())
    elif isinstance(data, list):
        items = iter(enumerate(data))
    else:
        return found
    for key, value in items:
        path = (*prefix, key)
        found.append(path)
        found += leaf_paths(value, path)
    return found


def get_at(data: Any, path: JsonPath) -> Any:
    for key in path:
        data = data[key]
    return data


def set_at(data: Any, path: JsonPath, value: Any) -> Any:
    data = copy.deepcopy(data)
    parent = get_at(data, path[:-1])
    parent[path[-1]] = value
    return data


def delete_at(data: Any, path: JsonPath) -> Any:
    data = copy.deepcopy(data)
    parent = get_at(data, path[:-1])
    del parent[path[-1]]
    return data


def is_nonsense(original: Any, new: Any) -> bool:
    """A replacement no reading of the field can accept: a number that is not finite, far
    beyond any real quantity, or negative where the document had a positive figure."""
    if isinstance(original, bool) or not isinstance(original, int | float):
        return False
    if isinstance(new, bool) or not isinstance(new, int | float):
        return False
    if isinstance(new, float) and not math.isfinite(new):
        return True
    if abs(new) >= 1e30:
        return True
    return original > 0 and new < 0


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)


def load_base(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def write_case(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


Mutation = Callable[[str], str | bytes]
