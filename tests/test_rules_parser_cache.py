"""The seeded, cached CEL parser parses exactly as cel-python's own parser does."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpusolve.rules import tables as cel

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
