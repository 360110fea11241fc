"""Compiled expressions and their evaluations kept between runs (`rules/compiled.py`): a
later run reads back what an earlier one compiled and evaluated for the same text and code,
compiles again anything else (a changed rule, other code, an unreadable or foreign file),
gives the same answers as a run that keeps nothing, and the library never touches the disk."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.factories.catalog import card
from tests.factories.files import write_file
from tests.factories.requirements import requirements, workload
from tests.support.shipped import ROOT

from gpusolve.load import document_cache
from gpusolve.rules import ActivationCache, compiled, evaluate_workload, load_ruleset
from gpusolve.rules import compile as compile_module
from gpusolve.rules.evaluate import Unit
from gpusolve.rules.templates import format_value

# `card.memory_gb * 2` is no direct shape: cel-python evaluates it, and its memo is kept.
RULE = """\
rules:
  - id: doubled-memory
    source: H13
    title: test
    require:
      card: card.memory_gb * 2 >= {threshold}
    advise: "two cards of {workload.model.params_b * 2} GB"
"""


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory, and no expression or document of another test's run in
    memory. The command keeps compiled expressions with the documents they come from: the
    switch is the document cache's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compiled.STORE.forget()
    document_cache._new.clear()
    yield tmp_path / "cache" / "gpusolve" / "rules-compiled.pickle"
    compiled.STORE.forget()
    document_cache._new.clear()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every predicate actually compiled."""
    seen: list[str] = []
    real = compile_module.compile_predicate

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(compile_module, "compile_predicate", counted)
    return seen


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every evaluation cel-python actually ran."""
    seen: list[object] = []
    real = Unit._evaluate

    def counted(self: Unit, context: Any) -> object:
        seen.append(self)
        return real(self, context)

    monkeypatch.setattr(Unit, "_evaluate", counted)
    return seen


def _next_run() -> None:
    """What ends one process and starts the next: the file written, nothing in memory."""
    compiled.STORE.save()
    compiled.STORE.forget()


def _answers(
    rule_file: Path, sizes_gb: tuple[int, ...] = (48, 80, 141)
) -> tuple[list[int], list[str]]:
    """Which cards (by memory) the rule admits, and the advice, for a 13B workload."""
    rules = load_ruleset([rule_file], shipped=False)
    w = workload("w13", params_b=13)
    result = evaluate_workload(rules, w, requirements(w))
    cache = ActivationCache({})
    admitted = [gb for gb in sizes_gb if not result.check("card", cache.card(card(str(gb), gb)))]
    return admitted, list(result.advice)


def test_outside_the_command_nothing_is_kept(cache_home: Path, tmp_path: Path) -> None:
    rule = write_file(tmp_path, RULE.replace("{threshold}", "160"), "r.yaml")
    _answers(rule)
    _next_run()
    assert not cache_home.exists()


def test_a_later_run_reads_back_what_it_compiled_and_evaluated(
    cache_home: Path, tmp_path: Path, compiles: list[str], evaluations: list[object]
) -> None:
    rule = write_file(tmp_path, RULE.replace("{threshold}", "160"), "r.yaml")
    cold = _answers(rule)
    # 48 GB doubled is 96 < 160; 80 and 141 pass. The advice doubles 13 (B) to 26.
    assert cold == ([80, 141], ["two cards of 26 GB"])
    with document_cache.kept_between_runs():
        assert _answers(rule) == cold
        assert compiles and evaluations
        _next_run()
        assert cache_home.is_file()
        compiles.clear()
        evaluations.clear()
        assert _answers(rule) == cold
        assert compiles == [] and evaluations == []  # read back, not compiled nor evaluated
        # A card no run has seen is evaluated: 79 GB doubled is 158 < 160.
        assert _answers(rule, (79,)) == ([], ["two cards of 26 GB"])
        assert len(evaluations) == 1


def test_a_changed_rule_is_compiled_and_evaluated_again(
    cache_home: Path, tmp_path: Path, compiles: list[str]
) -> None:
    with document_cache.kept_between_runs():
        rule = write_file(tmp_path, RULE.replace("{threshold}", "160"), "r.yaml")
        assert _answers(rule)[0] == [80, 141]
        _next_run()
        compiles.clear()
        # The same file and cards, a higher threshold: 80 GB doubled (160) no longer passes.
        changed = write_file(tmp_path, RULE.replace("{threshold}", "200.0"), "r.yaml")
        assert _answers(changed)[0] == [141]
    assert compiles == ["card.memory_gb * 2 >= 200.0"]


def test_other_code_is_a_miss(
    cache_home: Path, tmp_path: Path, compiles: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = write_file(tmp_path, RULE.replace("{threshold}", "160"), "r.yaml")
    with document_cache.kept_between_runs():
        _answers(rule)
        _next_run()
        compiles.clear()
        monkeypatch.setattr(compiled, "code_fingerprint", lambda: "an edited rules package")
        assert _answers(rule)[0] == [80, 141]
    assert compiles == ["true", "card.memory_gb * 2 >= 160"]  # the rule's `when` and require


def _damaged(path: Path) -> bytes:
    """The file with one byte of a kept tree changed, as a bad disk might leave it."""
    data = bytearray(path.read_bytes())
    at = data.rindex(b"lark")
    data[at] ^= 0xFF
    return bytes(data)


def _wrong_shape(path: Path) -> bytes:
    """A whole file of this code whose entries are not entries."""
    entries = pickle.loads(path.read_bytes()[32:])["entries"]
    return compiled.encode({key: ("a", "b", "c", "d") for key in entries})


def _bad_tree(path: Path) -> bytes:
    """A whole file of this code whose units' trees are not trees."""
    entries = pickle.loads(path.read_bytes()[32:])["entries"]
    for key, (layout, nonnull, units, memos) in entries.items():
        broken = tuple((reads, want, shape, "not bytes") for reads, want, shape, _ in units)
        entries[key] = (layout, nonnull, broken, memos)
    return compiled.encode(entries)


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: b"not a pickle at all",
        lambda path: pickle.dumps(["a", "list"]),
        lambda path: path.read_bytes()[: len(path.read_bytes()) // 2],
        lambda path: b"",
        _damaged,
        _wrong_shape,
        _bad_tree,
    ],
    ids=["not-a-pickle", "foreign", "truncated", "empty", "damaged", "shape", "tree"],
)
def test_an_unreadable_or_foreign_file_is_a_miss(
    cache_home: Path, tmp_path: Path, compiles: list[str], damage: Any
) -> None:
    rule = write_file(tmp_path, RULE.replace("{threshold}", "160"), "r.yaml")
    with document_cache.kept_between_runs():
        _answers(rule)
        _next_run()
        cache_home.write_bytes(damage(cache_home))
        compiles.clear()
        assert _answers(rule) == ([80, 141], ["two cards of 26 GB"])
    assert compiles == ["true", "card.memory_gb * 2 >= 160"]


def test_kept_values_print_as_cel_values() -> None:
    """An advice placeholder's kept value prints as the CEL value it stands for."""
    from celpy import celtypes as ct

    cases = [
        (ct.DoubleType(112.0), "112"),
        (ct.DoubleType(13.3333), "13.33"),
        (ct.IntType(3), "3"),
        (ct.StringType("north"), "north"),
        (ct.BoolType(True), "true"),
        (ct.ListType([ct.StringType("a"), ct.DoubleType(2.0)]), "a, 2"),
    ]
    for value, shown in cases:
        plain = compiled._plain(value)
        assert type(plain).__module__ == "builtins"
        assert format_value(plain) == format_value(value) == shown
    assert compiled._plain(ct.MapType({ct.StringType("a"): ct.DoubleType(1.0)})) is compiled._SKIP


def test_a_warm_plan_needs_neither_lark_nor_cel_python_and_prints_the_same(
    tmp_path: Path,
) -> None:
    """The command twice in fresh processes: the second reads every expression and every
    evaluation back, loads no parser or evaluator, and its plan is the first one's."""
    probe = (
        "import atexit, sys\n"
        "from gpusolve.cli import main\n"
        "def loaded():\n"
        "    found = sorted({m.split('.')[0] for m in sys.modules} & {'lark', 'celpy'})\n"
        "    sys.stderr.write('LOADED ' + ','.join(found) + '\\n')\n"
        "atexit.register(loaded)\n"
        "main(sys.argv[1:])\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "solver")}
    example = str(ROOT / "examples" / "pretrain-70b-infiniband.yaml")
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, "plan", example, "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    cold, warm = runs
    assert "LOADED celpy,lark" in cold.stderr
    assert "LOADED \n" in warm.stderr
    assert json.loads(warm.stdout) == json.loads(cold.stdout)
