"""The house's gates over the whole package that `ast` alone does not give: no new run of six
or more identical lines in `solver/`, and no new definition that nothing uses.

Both verdicts come from libraries in the `test` extra, configured in pyproject.toml so that
a developer gets the same list from the command line:
- duplicate code: pylint's similarity checker (`[tool.pylint.similarities]`; the full
  `pylint --disable=all --enable=duplicate-code solver/gpusolve` lists the same runs
  between two files; the checker never compares a file with itself, so the gate also gives
  it each file twice). The runs already in the package are recorded in
  `tests/data/house_gates/duplicate_code.json`; a run not recorded there fails, and so does
  a record whose run is gone (so that it cannot come back unseen).
- dead code: vulture (`[tool.vulture]`; plain `vulture` at the repository root gives the
  same list), with `tests/data/house_gates/dead_code_whitelist.py` naming what only a
  framework, a serialiser or a template uses. A whitelisted name vulture no longer reports
  fails too.
"""

from __future__ import annotations

import ast
import json
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pylint.checkers.symilar import LineSet, Symilar
from vulture import Vulture

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "solver" / "gpusolve"
GATES = ROOT / "tests" / "data" / "house_gates"
BASELINE = GATES / "duplicate_code.json"
WHITELIST = GATES / "dead_code_whitelist.py"


def _tool_config(name: str) -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        tool: dict[str, Any] = tomllib.load(f)["tool"]
    return tool[name]


# --- duplicate code ------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A run of identical lines in two files (or twice in one), as pylint compared them
    (stripped, without comments, docstrings, imports or signatures). No line numbers: an
    edit above a recorded run moves it without making it new."""

    files: tuple[str, str]  # repository-relative paths, sorted
    lines: tuple[str, ...]

    def as_json(self) -> dict[str, list[str]]:
        return {"files": list(self.files), "lines": list(self.lines)}


def _skipped_lines(source: str, *, imports: bool, signatures: bool) -> frozenset[int]:
    """The 1-based lines pylint leaves out for `ignore-imports` and `ignore-signatures`.

    Found with the standard library's `ast`: pylint finds them on astroid trees, which
    cost 10 s for the package on a loaded 2-core machine (24 s with astroid's inference
    transforms, as `symilar` builds them), against under 1 s here; the lines are the same
    (a statement's span; a def's from its `def` line to its body's first line)."""
    skipped: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if imports and isinstance(node, ast.Import | ast.ImportFrom):
            skipped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if signatures and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            skipped.update(range(node.lineno, node.body[0].lineno))
    return frozenset(skipped)


def _line_set(path: Path, root: Path, options: Mapping[str, Any]) -> LineSet:
    source = path.read_text(encoding="utf-8")
    skipped = _skipped_lines(
        source, imports=options["ignore-imports"], signatures=options["ignore-signatures"]
    )
    return LineSet(
        path.relative_to(root).as_posix(),
        source.splitlines(keepends=True),
        ignore_comments=options["ignore-comments"],
        ignore_docstrings=options["ignore-docstrings"],
        line_enabled_callback=lambda _msg, lineno: lineno not in skipped,
    )


def _runs(line_sets: list[LineSet], min_lines: int) -> Iterator[Block]:
    """The runs pylint's similarity checker reports between the line sets, in pairs."""
    symilar = Symilar(min_lines=min_lines)
    symilar.linesets = line_sets
    for common in symilar._iter_sims():
        if common.fst_lset is common.snd_lset and common.fst_file_start >= common.snd_file_start:
            continue  # a file against itself: the whole file, and each run twice
        first = common.fst_lset
        lines = tuple(
            s.text
            for s in first.stripped_lines
            if common.fst_file_start <= s.line_number < common.fst_file_end
        )
        pair = sorted((first.name, common.snd_lset.name))
        yield Block((pair[0], pair[1]), lines)


def identical_blocks(
    files: Iterable[Path], root: Path, options: Mapping[str, Any]
) -> frozenset[Block]:
    """Every run pylint's similarity checker reports among `files`: between two files, and
    (the checker compares only different files) within one, given as that file twice."""
    line_sets = [_line_set(p, root, options) for p in sorted(files)]
    min_lines = options["min-similarity-lines"]
    within = (run for ls in line_sets for run in _runs([ls, ls], min_lines))
    return frozenset((*_runs(line_sets, min_lines), *within))


def _within(run: Block, record: Block) -> bool:
    """The run is the record's, or part of it: a recorded run that an edit shortened is
    not new (and its record still stands); one that grew is."""
    n = len(run.lines)
    return run.files == record.files and any(
        record.lines[i : i + n] == run.lines for i in range(len(record.lines) - n + 1)
    )


def new_runs(found: Iterable[Block], baseline: Iterable[Block]) -> frozenset[Block]:
    return frozenset(b for b in found if not any(_within(b, r) for r in baseline))


def gone_records(found: Iterable[Block], baseline: Iterable[Block]) -> frozenset[Block]:
    return frozenset(r for r in baseline if not any(_within(b, r) for b in found))


def read_baseline(path: Path) -> frozenset[Block]:
    records = json.loads(path.read_text(encoding="utf-8"))["blocks"]
    return frozenset(Block((r["files"][0], r["files"][1]), tuple(r["lines"])) for r in records)


def _package_blocks() -> frozenset[Block]:
    files = (p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    return identical_blocks(files, ROOT, _tool_config("pylint")["similarities"])


def _listing(blocks: Iterable[Block]) -> str:
    return json.dumps(
        [b.as_json() for b in sorted(blocks, key=lambda b: b.files)], indent=2, ensure_ascii=False
    )


@pytest.fixture(scope="module")
def package_blocks() -> frozenset[Block]:
    return _package_blocks()


def test_no_new_identical_run_of_six_lines_in_the_package(
    package_blocks: frozenset[Block],
) -> None:
    new = new_runs(package_blocks, read_baseline(BASELINE))
    assert not new, (
        "identical runs of 6+ lines in solver/ that were not there before; share one piece "
        f"of code (or, where the two must stay apart, record them in {BASELINE.name}):\n"
        + _listing(new)
    )


def test_the_baseline_records_only_runs_still_in_the_package(
    package_blocks: frozenset[Block],
) -> None:
    gone = gone_records(package_blocks, read_baseline(BASELINE))
    assert not gone, f"runs no longer in solver/; remove them from {BASELINE.name}:\n" + _listing(
        gone
    )


def test_the_gate_compares_six_identical_lines_of_code() -> None:
    options = _tool_config("pylint")["similarities"]
    # pylint reports a run longer than `min-similarity-lines`.
    assert options["min-similarity-lines"] == 5
    assert options["ignore-comments"] and options["ignore-docstrings"]
    assert options["ignore-imports"] and options["ignore-signatures"]


# Six distinct lines of code; `_write` puts them (or their first `lines`) in a function.
_BLOCK = (
    "total_gb = sum(sizes_gb)",
    "spare_gb = capacity_gb - total_gb",
    "if spare_gb < 0:",
    "    raise ValueError(spare_gb)",
    "share = spare_gb / capacity_gb",
    "return round(share, 3)",
)
# The same lines as pylint compares them: stripped.
_COMPARED = tuple(line.strip() for line in _BLOCK)


def _write(path: Path, name: str, body: Iterable[str], *, above: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = [f"X{i} = {i}" for i in range(above)]
    lines = [*head, f"def {name}(sizes_gb, capacity_gb):", *(f"    {b}" for b in body)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _tmp_blocks(tmp_path: Path) -> frozenset[Block]:
    files = sorted(tmp_path.rglob("*.py"))
    return identical_blocks(files, tmp_path, _tool_config("pylint")["similarities"])


def test_a_copied_six_line_run_is_new_and_a_five_line_one_is_not(tmp_path: Path) -> None:
    _write(tmp_path / "pkg" / "a.py", "spare", _BLOCK)
    _write(tmp_path / "pkg" / "b.py", "headroom", _BLOCK, above=3)
    expected = Block(("pkg/a.py", "pkg/b.py"), _COMPARED)
    assert _tmp_blocks(tmp_path) == {expected}

    _write(tmp_path / "pkg" / "b.py", "headroom", _BLOCK[:5])
    _write(tmp_path / "pkg" / "a.py", "spare", (*_BLOCK[:5], "return 1.0"))
    assert _tmp_blocks(tmp_path) == frozenset()


def test_a_run_copied_within_one_file_is_new(tmp_path: Path) -> None:
    body = [
        f"def {n}(sizes_gb, capacity_gb):\n" + "".join(f"    {b}\n" for b in _BLOCK) for n in "fg"
    ]
    (tmp_path / "a.py").write_text("\n\n".join(body), encoding="utf-8")
    assert _tmp_blocks(tmp_path) == {Block(("a.py", "a.py"), _COMPARED)}


def test_the_gate_compares_code_not_docstrings_comments_or_imports(tmp_path: Path) -> None:
    prose = ['"""', *(f"Line {i} of the same long docstring." for i in range(8)), '"""']
    imports = ["from os.path import (", *(f"    {n}," for n in "abcdefgh"), ")"]
    comments = [f"# the same comment, line {i}" for i in range(8)]
    for name in ("a", "b"):
        text = "\n".join([*prose, *imports, *comments, f"{name.upper()} = 1"]) + "\n"
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    assert _tmp_blocks(tmp_path) == frozenset()


def test_a_recorded_run_passes_where_it_moves_and_fails_in_a_third_file(tmp_path: Path) -> None:
    _write(tmp_path / "a.py", "spare", _BLOCK)
    _write(tmp_path / "b.py", "headroom", _BLOCK)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"blocks": [{"files": ["a.py", "b.py"], "lines": _COMPARED}]}))

    _write(tmp_path / "b.py", "headroom", _BLOCK, above=20)
    assert new_runs(_tmp_blocks(tmp_path), read_baseline(baseline)) == frozenset()
    assert gone_records(_tmp_blocks(tmp_path), read_baseline(baseline)) == frozenset()

    _write(tmp_path / "c.py", "left", _BLOCK)
    new = new_runs(_tmp_blocks(tmp_path), read_baseline(baseline))
    assert {b.files for b in new} == {("a.py", "c.py"), ("b.py", "c.py")}


def test_a_recorded_run_that_shrinks_passes_and_one_that_grows_fails(tmp_path: Path) -> None:
    seven = (*_BLOCK[:-1], "print(share)", _BLOCK[-1])
    record = Block(("a.py", "b.py"), tuple(line.strip() for line in seven))
    _write(tmp_path / "a.py", "spare", seven)
    _write(tmp_path / "b.py", "headroom", seven)
    assert _tmp_blocks(tmp_path) == {record}

    _write(tmp_path / "a.py", "spare", ("total_gb = 0", *seven[1:]))
    shrunk = _tmp_blocks(tmp_path)
    assert shrunk == {Block(record.files, record.lines[1:])}
    assert new_runs(shrunk, {record}) == frozenset()
    assert gone_records(shrunk, {record}) == frozenset()

    _write(tmp_path / "a.py", "spare", ("top_gb = max(sizes_gb)", *seven))
    _write(tmp_path / "b.py", "headroom", ("top_gb = max(sizes_gb)", *seven))
    grown = _tmp_blocks(tmp_path)
    assert len(next(iter(grown)).lines) == 8
    assert new_runs(grown, {record}) == grown


# --- dead code -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Unused:
    name: str
    kind: str  # vulture's: function, method, variable, attribute, ...
    where: str  # file:line


def unused_code(paths: Iterable[Path], options: Mapping[str, Any]) -> list[Unused]:
    """vulture's report over `paths` with the repository's options (paths excepted)."""
    vulture = Vulture(ignore_decorators=options.get("ignore_decorators", []))
    vulture.scavenge([str(p) for p in paths])
    return [
        Unused(item.name, item.typ, f"{item.filename}:{item.first_lineno}")
        for item in vulture.get_unused_code(min_confidence=options["min_confidence"])
    ]


def _whitelisted_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value.attr
        for node in tree.body
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Attribute)
    }


@pytest.fixture(scope="module")
def vulture_options() -> dict[str, Any]:
    options = _tool_config("vulture")
    # What the command line reads is what the test reads.
    assert [ROOT / p for p in options["paths"]] == [PACKAGE, WHITELIST]
    return options


def test_no_unused_code_in_the_package(vulture_options: dict[str, Any]) -> None:
    unused = unused_code([PACKAGE, WHITELIST], vulture_options)
    assert not unused, (
        "definitions nothing in solver/ uses; delete them (or, where a framework, a "
        f"serialiser or a template reads them, name them in {WHITELIST.name}):\n"
        + "\n".join(f"{u.where}: unused {u.kind} {u.name!r}" for u in unused)
    )


def test_the_whitelist_names_only_what_vulture_reports(vulture_options: dict[str, Any]) -> None:
    reported = {u.name for u in unused_code([PACKAGE], vulture_options)}
    stale = sorted(_whitelisted_names(WHITELIST) - reported)
    assert not stale, f"used or gone; remove from {WHITELIST.name}: {', '.join(stale)}"


def test_an_unused_function_fails_and_the_whitelist_silences_a_listed_name(
    tmp_path: Path, vulture_options: dict[str, Any]
) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        "def used(x):\n    return x\n\n\ndef forgotten():\n    return 1\n\n\nprint(used(1))\n",
        encoding="utf-8",
    )
    assert unused_code([module], vulture_options) == [
        Unused("forgotten", "function", f"{module}:5")
    ]
    whitelist = tmp_path / "whitelist.py"
    whitelist.write_text("_ = object()\n_.forgotten\n", encoding="utf-8")
    assert _whitelisted_names(whitelist) == {"forgotten"}
    assert unused_code([module, whitelist], vulture_options) == []


def test_a_validator_and_a_click_command_count_as_used(
    tmp_path: Path, vulture_options: dict[str, Any]
) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        "import click\nfrom pydantic import BaseModel, model_validator\n\n\n"
        "class M(BaseModel):\n    @model_validator(mode='after')\n"
        "    def _check(self):\n        return self\n\n\n"
        "@click.group()\ndef main():\n    pass\n\n\n"
        "@main.command('go')\ndef go():\n    pass\n\n\nprint(M)\n",
        encoding="utf-8",
    )
    assert unused_code([module], vulture_options) == []
