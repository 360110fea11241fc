"""The seeded, cached CEL parser parses exactly as cel-python's own parser does."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpusolve.rules import cache as cel
from gpusolve.rules.parse import _parse

EXPRESSIONS = [
    'workload.kind == "full_finetune" && workload.model.params_b >= 13.0',
    "card.memory_gb >= 80 || !(server.fabric.kind in ['infiniband', 'roce'])",
    "deployment.nodes > 1 ? offer.bgp : true",
    "size(offer.licences) > 0 && offer.licences.exists(l, l == 'IDC')",
    "-1.5e3 < x.y[0] + 2 * (z - 1) % 3",
    "true && false || null == null",
]


def norm(t: Any) -> tuple[Any, ...]:
    """A tree as plain tuples (rule names may be str or lark Tokens, which compare equal)."""
    if hasattr(t, "children"):
        return (str(t.data), tuple(norm(c) for c in t.children))
    return (str(t.type), str(t.value), t.line, t.column)


def _default_trees() -> list[str]:
    """Parse with a parser cel-python builds itself, in a fresh process."""
    code = (
        "import sys, celpy.celparser as p\n"
        + "from typing import Any\n"
        + inspect.getsource(norm)
        + "parser = p.CELParser()\n"
        "for line in sys.stdin.read().split('\\n'):\n"
        "    print(repr(norm(parser.parse(line))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input="\n".join(EXPRESSIONS),
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_seeded_parser_matches_cel_python(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from celpy.celparser import CELParser

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    cel.seed_parser()
    seeded = [repr(norm(CELParser().parse(e))) for e in EXPRESSIONS]
    assert seeded == _default_trees()
    assert list((tmp_path / "gpusolve").glob("cel-lark-*.cache")), "tables were not cached"
    # A second build reads the cache and still parses the same.
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    cel.seed_parser()
    assert [repr(norm(CELParser().parse(e))) for e in EXPRESSIONS] == seeded


def test_unwritable_cache_dir_falls_back(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert cel.parser_cache_file() is None


def test_parsed_trees_persist_across_processes(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    writer = cel._TreeCache()
    trees = {e: _parse(e) for e in EXPRESSIONS}
    for text, tree in trees.items():
        writer.remember(text, tree)
    writer.save()
    path = writer.path()
    assert path is not None and path.is_file()
    assert path.stat().st_mode & 0o077 == 0, "the pickle must be private to the user"
    loaded = cel._TreeCache().load()
    assert {t: norm(v) for t, v in loaded.items()} == {t: norm(v) for t, v in trees.items()}
    # A truncated or foreign file is ignored, never fatal, and rewritten on the next save.
    path.write_bytes(b"\x80\x05 not a pickle")
    assert cel._TreeCache().load() == {}
    path.write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00]\x94.")  # a pickled list
    assert cel._TreeCache().load() == {}


def _trees(count: int) -> dict[str, Any]:
    return {f"{i} + 1": _parse(f"{i} + 1") for i in range(count)}


def test_the_tree_cache_keeps_the_most_recently_used(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cel, "_CACHE_MAX", 3)
    first = cel._TreeCache()
    for text, tree in _trees(3).items():  # "0 + 1", "1 + 1", "2 + 1"
        first.remember(text, tree)
    first.save()
    second = cel._TreeCache()
    assert second.lookup("0 + 1") is not None  # read from disk: now the most recent
    second.remember("9 + 1", _parse("9 + 1"))
    second.save()
    # Least recently used first out: "1 + 1" was neither read nor written by the second run.
    assert list(cel._TreeCache().load()) == ["2 + 1", "0 + 1", "9 + 1"]


def test_an_oversized_tree_cache_shrinks_without_new_trees(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    writer = cel._TreeCache()
    for text, tree in _trees(5).items():
        writer.remember(text, tree)
    writer.save()
    monkeypatch.setattr(cel, "_CACHE_MAX", 2)
    reader = cel._TreeCache()
    assert len(reader.known) == 5
    reader.save()
    assert list(cel._TreeCache().load()) == ["3 + 1", "4 + 1"]
