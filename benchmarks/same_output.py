"""Same output: proof that a refactor changed nothing a user sees.

Runs one fixed matrix of `gpusolve` commands (every shipped example through `plan` in every
format, `--bom`, `--top-k`, `--why-not`, `--sensitivity`, scenarios, the scale examples,
`frontier`, `colo`, `estimate`, `rules`, `catalog`, `schema`, `profile` and a few input
errors) on two source trees and compares, per command, the exit code, stdout, stderr and
every file the command writes (`-o`, `--plot`), byte for byte:

* base: a git revision (`--base REV`, default c032361, the commit before the package
  refactor), checked out with `git worktree add --detach` into a temporary folder that is
  removed at the end, also on an error or Ctrl-C;
* current: the working tree this script sits in (or `--tree DIR`, e.g. a second worktree).

Each side runs `python -m gpusolve` (this interpreter) with PYTHONPATH=TREE/solver and
cwd=TREE, so each imports its own package and reads its own catalog/, rules/ and examples/
(`gpusolve/load/data.py` finds them relative to the package in a checkout). Test fixtures
(tests/... files: `profile` logs, a user rule file) are copied from the base tree into a
shared folder, so that moving tests/ does not count as a change in output.

Run (from the repository root, with the project's virtual environment):

    .venv/bin/python benchmarks/same_output.py                 # c032361 against the working tree
    .venv/bin/python benchmarks/same_output.py --base HEAD --jobs 2 --keep /tmp/same
    .venv/bin/python benchmarks/same_output.py --only plan/scenarios --list

Prints one line per case (`same` / `DIFFERS`, with each side's seconds), the first lines of
a unified diff for each difference, `N same, M differ` and the wall time. Exit status: 0 all
the same, 1 something differs, 2 usage or set-up error, 130 interrupted. A difference that a
deliberate fix explains (`FIXED`: the base tree lacks the fix) is printed with its reason
and the test that pins it, and does not count as a failure.

Normalised before comparing (nothing else is): each tree's absolute path (as given and
resolved) becomes <TREE>, each side's per-case output folder <OUT> and the shared fixture
folder <FIXTURES>. Two runs of the same tree were checked to agree byte for byte without
any other normalisation: the solver runs with `--workers 1` and the default seed, plans
omit wall times unless `--timings`, sensitivity zeroes its wall time, the progress bar is
only drawn on a terminal, and the SVG charts are written with a fixed hash salt and no date.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import difflib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

DEFAULT_BASE = "c032361"
TIMEOUT_S = 600.0  # one command; the slowest in the matrix takes under 10 s on 2 cores
DIFF_LINES = 40  # of unified diff printed per differing case

# Shipped examples: the card `--why-not` asks about that the plan does not use, and one it
# uses (each answer checked to be a real explanation, exit 0).
EXAMPLES: dict[str, tuple[str, str]] = {
    "chat-day-lora-night": ("l20", "ascend-910b"),
    "finetune-7b-deadline": ("ascend-910b", "h800-sxm"),
    "pretrain-70b-infiniband": ("ascend-910b", "h800-sxm"),
    "scenarios-demand-growth": ("l20", "ascend-910b"),
    "south-latency-north-batch": ("ascend-910b", "rtx-4090"),
    "startup-tight-capex": ("ascend-910b", "h800-sxm"),
}
SCENARIOS = "scenarios-demand-growth"  # refuses --top-k; the only one with --robust

SCALE = (
    "large-site-a100",  # a catalogue, not requirements: plan refuses it (exit 2)
    "large-site-h800",  # idem
    "moe-deepseek-v3-class",  # on the shipped catalogue: infeasible (exit 1)
    "pretrain-65b-21-days",  # idem
)
# The scale examples as their comments say to run them: on their own catalogue.
SCALE_PAIRS = {
    "pretrain-65b-21-days": "large-site-a100",
    "moe-deepseek-v3-class": "large-site-h800",
}

SCHEMAS = (
    "requirements",
    "catalog",
    "rules",
    "heuristics",
    "fleet",
    "plan",
    "estimate",
    "colo",
    "frontier",
    "rules-explain",
)

# Inputs that live under tests/ (which the refactor may move): copied from the base tree
# into a folder both sides read, named in arguments as "{fixtures}/<path>".
FIXTURES = (
    "tests/data/dmon/a100_default_throttling.log",
    "tests/data/dmon/h100_pucvmet_dt.log",
    "tests/data/dmon/l40s_query_stalled.csv",
    "tests/data/dmon/v100_pucvmet_legacy.log",
    "tests/corpus/valid/rules-user.yaml",
)

OUT = "{out}"  # in an argument: this case's output folder on this side
FIX = "{fixtures}"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]

    @property
    def slug(self) -> str:
        return self.name.replace("/", "__")


def _plan_cases() -> Iterator[Case]:
    for stem, (unused, used) in EXAMPLES.items():
        reqs = f"examples/{stem}.yaml"

        def case(label: str, *extra: str, stem: str = stem, reqs: str = reqs) -> Case:
            return Case(f"plan/{stem}/{label}", ("plan", reqs, "--workers", "1", *extra))

        yield case("text")
        yield case("json", "--format", "json")
        yield case("yaml", "--format", "yaml")
        yield case("markdown", "--format", "markdown")
        yield case("html", "--format", "html", "-o", f"{OUT}/plan.html")
        yield case("bom", "--bom")
        yield case("bom-csv", "--bom", "--format", "csv")
        if stem == SCENARIOS:
            yield case("top-k-2-refused", "--top-k", "2")  # exit 2
        else:
            yield case("top-k-2", "--top-k", "2")
        yield case(f"why-not-unused-{unused}", "--why-not", unused)
        yield case(f"why-not-used-{used}", "--why-not", used)
        yield case("sensitivity", "--sensitivity")
        yield case("sensitivity-json", "--sensitivity", "--format", "json")
        if stem == SCENARIOS:
            yield case("robust-worst", "--robust", "worst")
            yield case(f"sensitivity-why-not-{unused}", "--sensitivity", "--why-not", unused)
    for stem in SCALE:
        yield Case(f"plan/scale/{stem}", ("plan", f"examples/scale/{stem}.yaml", "--workers", "1"))
    for stem, catalog in SCALE_PAIRS.items():
        yield Case(
            f"plan/scale/{stem}+{catalog}",
            (
                "plan",
                f"examples/scale/{stem}.yaml",
                "--no-default-catalog",
                "--catalog",
                f"examples/scale/{catalog}.yaml",
                "--workers",
                "1",
            ),
        )


def _other_cases() -> Iterator[Case]:
    scale_a100 = (
        "examples/scale/pretrain-65b-21-days.yaml",
        "--no-default-catalog",
        "--catalog",
        "examples/scale/large-site-a100.yaml",
    )
    # frontier (no --workers option: it solves with one worker): the README's example, the
    # richest shipped one, and the cluster-scale one on its own catalogue.
    for label, inputs in (
        ("pretrain-70b-infiniband", ("examples/pretrain-70b-infiniband.yaml",)),
        ("chat-day-lora-night", ("examples/chat-day-lora-night.yaml",)),
        ("scale-pretrain-65b-21-days+large-site-a100", scale_a100),
    ):
        yield Case(f"frontier/{label}/text", ("frontier", *inputs))
        yield Case(f"frontier/{label}/json", ("frontier", *inputs, "--format", "json"))
    chat = "examples/chat-day-lora-night.yaml"
    yield Case(
        "frontier/chat-day-lora-night/plot-svg", ("frontier", chat, "--plot", f"{OUT}/f.svg")
    )
    yield Case(
        "frontier/chat-day-lora-night/html",
        ("frontier", chat, "--format", "html", "-o", f"{OUT}/frontier.html"),
    )

    fleet = "examples/fleets/h100-training-cluster.yaml"
    yield Case("colo/h100-training-cluster/text", ("colo", fleet))
    yield Case("colo/h100-training-cluster/json", ("colo", fleet, "--format", "json"))
    yield Case(
        "colo/h100-training-cluster/markdown-top-3",
        ("colo", fleet, "--top", "3", "--format", "markdown"),
    )

    ft7b = "examples/finetune-7b-deadline.yaml"
    for stem in ("finetune-7b-deadline", "chat-day-lora-night"):
        reqs = f"examples/{stem}.yaml"
        yield Case(f"estimate/{stem}/text", ("estimate", reqs))
        yield Case(f"estimate/{stem}/json", ("estimate", reqs, "--format", "json"))
    layout = ("--card", "h100-sxm", "--gpus", "8", "--tp", "2", "--zero", "1")
    yield Case("estimate/finetune-7b-deadline/h100-tp2-zero1", ("estimate", ft7b, *layout))
    yield Case(
        "estimate/finetune-7b-deadline/h100-tp2-zero1-json",
        ("estimate", ft7b, *layout, "--format", "json"),
    )
    yield Case(
        "estimate/pretrain-70b-infiniband/a100-64-tp8-pp8-vp3-selective",
        (
            "estimate",
            "examples/pretrain-70b-infiniband.yaml",
            "--card",
            "a100-80gb-sxm",
            "--gpus",
            "64",
            "--tp",
            "8",
            "--pp",
            "8",
            "--vp",
            "3",
            "--recompute",
            "selective",
        ),
    )

    yield Case("rules/list", ("rules", "list"))
    yield Case("rules/list-json", ("rules", "list", "--format", "json"))
    yield Case("rules/list-source-H21", ("rules", "list", "--source", "H21"))
    yield Case("rules/show", ("rules", "show", "h21-one-node-first"))
    yield Case("rules/show-json", ("rules", "show", "h21-one-node-first", "--format", "json"))
    yield Case("rules/explain", ("rules", "explain", chat))
    yield Case("rules/explain-json", ("rules", "explain", chat, "--format", "json"))
    yield Case("rules/fields", ("rules", "fields"))
    yield Case("rules/fields-card", ("rules", "fields", "--kind", "card"))
    # The shipped files checked on top of themselves: every id a duplicate (exit 2).
    yield Case("rules/check-shipped", ("rules", "check", "rules/"))
    yield Case("rules/check-user", ("rules", "check", f"{FIX}/tests/corpus/valid/rules-user.yaml"))

    yield Case("catalog/validate", ("catalog", "validate"))
    yield Case(
        "catalog/validate-scale",
        ("catalog", "validate", "--no-default-catalog", "examples/scale/large-site-a100.yaml"),
    )
    yield Case("catalog/list", ("catalog", "list"))
    yield Case(
        "catalog/list-cards-json", ("catalog", "list", "--kind", "cards", "--format", "json")
    )
    yield Case("catalog/show", ("catalog", "show", "h100-sxm"))
    yield Case("catalog/show-json", ("catalog", "show", "h100-sxm", "--format", "json"))

    yield Case("schema/names", ("schema",))
    for name in SCHEMAS:
        yield Case(f"schema/{name}", ("schema", name))

    dmon = f"{FIX}/tests/data/dmon"
    for log in FIXTURES:
        if log.startswith("tests/data/dmon/"):
            yield Case(f"profile/{Path(log).stem}", ("profile", f"{FIX}/{log}"))
    yield Case(
        "profile/a100_default_throttling-card-json",
        (
            "profile",
            f"{dmon}/a100_default_throttling.log",
            "--card",
            "a100-80gb-sxm",
            "--format",
            "json",
        ),
    )

    # Input errors (exit 2 each).
    yield Case("error/plan-missing-file", ("plan", "examples/no-such-file.yaml", "--workers", "1"))
    yield Case(
        "error/plan-why-not-unknown-id", ("plan", ft7b, "--workers", "1", "--why-not", "no-such-id")
    )
    yield Case(
        "error/plan-robust-without-scenarios", ("plan", ft7b, "--workers", "1", "--robust", "worst")
    )
    yield Case("error/catalog-show-unknown-id", ("catalog", "show", "no-such-id"))
    yield Case("error/schema-unknown", ("schema", "no-such-schema"))


def matrix() -> list[Case]:
    cases = [*_plan_cases(), *_other_cases()]
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return cases


@dataclass(frozen=True)
class Side:
    label: str  # "base" or "current"
    tree: Path
    out_root: Path  # per-case output folders go under it
    env: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    """What one command left, normalised: component name -> bytes."""

    parts: dict[str, bytes]
    seconds: float


class Runner:
    """Starts the commands (each in its own process group, so that a stop ends it and any
    pool it started) and stops them all on Ctrl-C or SIGTERM."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._stopping = False

    def run(self, argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[str, bytes, bytes]:
        with self._lock:
            if self._stopping:
                raise KeyboardInterrupt
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self._running.add(proc)
        try:
            try:
                out, err = proc.communicate(timeout=self.timeout)
                code = str(proc.returncode)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                out, err = proc.communicate()
                code = f"timed out after {self.timeout:g} s"
        finally:
            with self._lock:
                self._running.discard(proc)
        return code, out, err

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            running = list(self._running)
        for proc in running:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
            if proc.poll() is None:
                _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group this script started for `proc` (its id is proc's pid)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _path_forms(path: Path) -> set[str]:
    """The spellings of an absolute path a command may print: as given and resolved."""
    return {str(path.absolute()), str(path.resolve()), os.path.realpath(path)}


def normalise(data: bytes, replacements: Sequence[tuple[bytes, bytes]]) -> bytes:
    for old, new in replacements:
        data = data.replace(old, new)
    return data


def _replacements(pairs: Sequence[tuple[Path, str]]) -> list[tuple[bytes, bytes]]:
    """Longest path first, so that a folder inside another is replaced whole."""
    found = [(form.encode(), token.encode()) for path, token in pairs for form in _path_forms(path)]
    return sorted(set(found), key=lambda pair: -len(pair[0]))


def run_case(runner: Runner, case: Case, side: Side, fixtures: Path) -> Outcome:
    out_dir = side.out_root / case.slug
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    args = [a.replace(OUT, str(out_dir)).replace(FIX, str(fixtures)) for a in case.args]
    started = time.monotonic()
    code, out, err = runner.run([sys.executable, "-m", "gpusolve", *args], side.tree, side.env)
    seconds = time.monotonic() - started
    repl = _replacements([(side.tree, "<TREE>"), (out_dir, "<OUT>"), (fixtures, "<FIXTURES>")])
    parts = {
        "exit code": f"{code}\n".encode(),
        "stdout": normalise(out, repl),
        "stderr": normalise(err, repl),
    }
    for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        parts[f"file {path.relative_to(out_dir).as_posix()}"] = normalise(path.read_bytes(), repl)
    return Outcome(parts, seconds)


def compare(case: Case, base: Outcome, current: Outcome) -> list[str]:
    """Unified diff lines of every part that differs (empty when all are the same)."""
    lines: list[str] = []
    for part in sorted(base.parts.keys() | current.parts.keys(), key=_part_order):
        old, new = base.parts.get(part), current.parts.get(part)
        if old == new:
            continue
        if old is None or new is None:
            lines.append(f"{part}: only on the {'current' if old is None else 'base'} side\n")
            continue
        diff = list(
            difflib.unified_diff(
                old.decode("utf-8", "replace").splitlines(keepends=True),
                new.decode("utf-8", "replace").splitlines(keepends=True),
                f"base/{case.name}: {part}",
                f"current/{case.name}: {part}",
                n=2,
            )
        )
        lines.extend(diff or [f"{part}: differs in bytes that do not decode as UTF-8\n"])
    return lines


def _part_order(part: str) -> tuple[int, str]:
    return ({"exit code": 0, "stdout": 1, "stderr": 2}.get(part, 3), part)


def keep(dest: Path, case: Case, side: Side, outcome: Outcome) -> None:
    folder = dest / case.slug / side.label
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "command").write_text("gpusolve " + " ".join(case.args) + "\n")
    for part, data in outcome.parts.items():
        name = part.replace(" ", "_") if not part.startswith("file ") else "files/" + part[5:]
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        raise SetupError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


class SetupError(Exception):
    pass


def side_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUSOLVE_DEBUG"}
    env.update(PYTHONPATH=str(tree / "solver"), COLUMNS="100", NO_COLOR="1")
    return env


def check_side(side: Side) -> None:
    """Each side must import its own package (not the editable install's)."""
    done = subprocess.run(
        [sys.executable, "-c", "import gpusolve; print(gpusolve.__file__)"],
        cwd=side.tree,
        env=side.env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    found = Path(done.stdout.strip()).resolve() if done.returncode == 0 else None
    if found is None or not found.is_relative_to((side.tree / "solver").resolve()):
        why = done.stderr.strip().splitlines()[-1:] if done.returncode else [f"imported {found}"]
        raise SetupError(f"{side.label} tree {side.tree}: gpusolve not importable from it ({why})")


def warm_up(side: Side) -> None:
    """matplotlib prints "building the font cache" on stderr the first time it runs on a
    machine: build it before the matrix so that no case's stderr depends on which side
    happened to draw the first chart."""
    subprocess.run(
        [sys.executable, "-c", "import matplotlib.font_manager"],
        cwd=side.tree,
        env=side.env,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run a fixed matrix of gpusolve commands on a base revision and on the "
        "working tree; compare exit codes, stdout, stderr and written files byte for byte.",
    )
    parser.add_argument(
        "--base",
        default=DEFAULT_BASE,
        metavar="REV",
        help="git revision to compare against [%(default)s]",
    )
    parser.add_argument(
        "--tree", type=Path, metavar="DIR", help="the 'current' source tree [this checkout]"
    )
    parser.add_argument("--only", metavar="SUBSTRING", help="run only cases whose name contains it")
    parser.add_argument(
        "--jobs", type=int, default=2, metavar="N", help="commands run at once [%(default)s]"
    )
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="write both sides' (normalised) outputs here"
    )
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# Outputs a deliberate fix changed: (case name prefix, a file and a line of it that only a
# tree with the fix has, why). Each is a bug the refactor exposed, with the test that pins
# the new behaviour; against a base without the fix, a difference in those cases is
# reported with its reason and not counted as a failure.
FIXED: tuple[tuple[str, str, str, str], ...] = (
    (
        "frontier/chat-day-lora-night/",
        "solver/gpusolve/analyses/frontier.py",
        "cand = prepare(",
        "the frontier skipped plan's horizon filter: its x2 point bought L20s whose 1,000 night "
        "runs of 17.3 h do not fit the horizon; `plan` at those deadlines never buys them "
        "(tests/test_frontier.py::test_each_point_is_the_plan_at_its_deadlines)",
    ),
)


def _fixed_since(case: str, base_tree: Path) -> str | None:
    """Why `case` may differ: a fix the base tree lacks (None: it must not differ)."""
    for prefix, path, marker, why in FIXED:
        source = base_tree / path
        has_fix = source.is_file() and marker in source.read_text(encoding="utf-8")
        if case.startswith(prefix) and not has_fix:
            return why
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cases = [c for c in matrix() if args.only is None or args.only in c.name]
    if args.list:
        for case in cases:
            print(case.name)
        return 0
    if not cases:
        print(f"no case name contains {args.only!r} (see --list)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)  # the clean-up below runs on SIGTERM too
    started = time.monotonic()
    here = Path(__file__).resolve().parent
    tmp = Path(tempfile.mkdtemp(prefix="gpusolve-same-output-"))
    runner = Runner(TIMEOUT_S)
    repo: Path | None = None
    base_tree = tmp / "base"
    try:
        repo = Path(git(here, "rev-parse", "--show-toplevel"))
        current = (args.tree or repo).absolute()
        if not (current / "solver" / "gpusolve").is_dir():
            raise SetupError(f"{current} has no solver/gpusolve")
        commit = git(repo, "rev-parse", "--verify", f"{args.base}^{{commit}}")
        git(repo, "worktree", "add", "--detach", "--quiet", str(base_tree), commit)
        fixtures = tmp / "fixtures"
        for rel in FIXTURES:
            (fixtures / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(base_tree / rel, fixtures / rel)
        sides = [
            Side("base", base_tree, tmp / "out" / "base", side_env(base_tree)),
            Side("current", current, tmp / "out" / "current", side_env(current)),
        ]
        for side in sides:
            check_side(side)
        warm_up(sides[0])
        print(f"base {args.base} ({commit[:12]}) in {base_tree}")
        print(f"current {current}")
        print(f"{len(cases)} case(s), {args.jobs} job(s)\n", flush=True)
        return run_all(runner, cases, sides, fixtures, args.jobs, args.keep, started)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        runner.stop()
        if repo is not None and base_tree.exists():
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "remove", "--force", str(base_tree)],
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )
        shutil.rmtree(tmp, ignore_errors=True)
        if repo is not None:
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "prune"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )


def run_all(
    runner: Runner,
    cases: Sequence[Case],
    sides: Sequence[Side],
    fixtures: Path,
    jobs: int,
    keep_dir: Path | None,
    started: float,
) -> int:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        # Both sides of a case are queued together, so that they run under the same load.
        futures = [
            [pool.submit(run_case, runner, case, side, fixtures) for side in sides]
            for case in cases
        ]
        same = differ = known = 0
        timings: list[tuple[float, str]] = []
        for case, pair in zip(cases, futures, strict=True):
            base, current = (_result(f) for f in pair)
            if keep_dir is not None:
                for side, outcome in zip(sides, (base, current), strict=True):
                    keep(keep_dir, case, side, outcome)
            timings.append((max(base.seconds, current.seconds), case.name))
            diff = compare(case, base, current)
            fixed = _fixed_since(case.name, sides[0].tree) if diff else None
            verdict = "DIFFERS" if diff else "same"
            print(f"{verdict:8} {case.name}  ({base.seconds:.1f} s / {current.seconds:.1f} s)")
            if fixed is not None:
                print(f"    expected: {fixed}")
                known += 1
            elif diff:
                differ += 1
            if diff:
                for line in diff[:DIFF_LINES]:
                    print("    " + line.rstrip("\n"))
                if len(diff) > DIFF_LINES:
                    print(f"    ... {len(diff) - DIFF_LINES} more diff line(s)")
            else:
                same += 1
            sys.stdout.flush()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        runner.stop()
        raise
    pool.shutdown()
    slowest = ", ".join(f"{name} {s:.1f} s" for s, name in sorted(timings, reverse=True)[:5])
    print(
        f"\n{same} same, {differ} differ" + (f", {known} by a fix listed in FIXED" if known else "")
    )
    print(f"slowest (per side): {slowest}")
    if keep_dir is not None:
        print(f"outputs kept in {keep_dir}/CASE/{{base,current}}/")
    print(f"wall time {time.monotonic() - started:.1f} s")
    return 1 if differ else 0


def _result(future: concurrent.futures.Future[Outcome]) -> Outcome:
    """Wait in short steps, so that Ctrl-C and SIGTERM are seen at once."""
    while True:
        try:
            return future.result(timeout=0.5)
        except concurrent.futures.TimeoutError:
            continue


if __name__ == "__main__":
    sys.exit(main())
