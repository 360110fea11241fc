"""The on-disk caches of the rule engine, both in the user's private cache directory.

- **Lark's parse tables** (`seed_parser`): cel-python 0.5 builds the same LALR tables from
  its grammar in every process, the larger part of loading the rules (without them,
  loading the shipped rules costs 1.26x the CPU time). cel-python has no public option for
  it, so `seed_parser` builds the parser with cel-python's own options and installs it
  where cel-python looks for it (`CELParser.CEL_PARSER`); hence `cel-python<0.6` in
  pyproject.toml. A test checks that the seeded parser parses exactly as cel-python's own.
- **Parsed trees** (`TREES`): the trees of expressions that passed the bounds, so a run
  does not parse the shipped rules again (about 0.025 s of each `gpusolve plan`).

The command keeps more than trees: each expression compiled, with its evaluations
(`compiled.py`); a run that finds every expression there reads neither file.

The numbers behind keeping both: benchmarks/README.md, "Rules start-up".
"""

from __future__ import annotations

import atexit
import contextlib
import pathlib
import pickle
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import lark

    # The same alias as `parse.Tree`, spelt out here: parse.py imports this module.
    Tree = lark.Tree[lark.Token]

# Trees kept on disk: `gpusolve plan` with the shipped rules reads 73.
_CACHE_MAX = 256


def parser_cache_file() -> pathlib.Path | None:
    """A per-user file for Lark's parse tables, or None when no private cache dir exists.

    Lark's cache is a pickle, so it lives in the user's own cache directory (created 0700),
    never in a shared temporary directory.
    """
    import lark

    from gpusolve.load.seen import user_cache_dir

    root = user_cache_dir()
    return None if root is None else root / f"cel-lark-{lark.__version__}.cache"


def seed_parser() -> None:
    """Build cel-python's shared parser ourselves, with Lark's table cache switched on.

    The tables are keyed by grammar, options and Lark version, so a stale cache is never
    read. The options below are cel-python 0.5's own (pinned in pyproject).
    """
    import celpy.celparser
    from celpy.celparser import CELParser
    from lark import Lark

    if CELParser.CEL_PARSER is not None:
        return
    cache = parser_cache_file()
    grammar = (pathlib.Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
    CELParser.CEL_PARSER = Lark(
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        cache=str(cache) if cache else False,
    )


class _TreeCache:
    """Parsed trees of expressions that passed every bound, pickled in the user's private
    cache directory (like Lark's table cache: never in a shared temporary directory), keyed
    by the Lark and cel-python versions that built them. Written once at exit, atomically.

    At most `_CACHE_MAX` trees, the most recently used kept: reading the file is a cost on
    every start-up, and without the bound it grew with every expression ever parsed (a
    developer's cache reached 4 MB after test runs, 0.2 s of each `gpusolve plan`)."""

    def __init__(self) -> None:
        self.new: dict[str, Tree] = {}
        self.used: dict[str, None] = {}  # texts found on disk this run, in order
        self._known: dict[str, Tree] | None = None
        self._registered = False

    @property
    def known(self) -> dict[str, Tree]:
        """The trees on disk, read once per process."""
        if self._known is None:
            self._known = self.load()
            if len(self._known) > _CACHE_MAX:
                self._save_at_exit()  # shrink it even if nothing new is parsed
        return self._known

    def lookup(self, text: str) -> Tree | None:
        tree = self.known.get(text)
        if tree is not None:
            self.used[text] = None
        return tree

    def path(self) -> pathlib.Path | None:
        tables = parser_cache_file()
        if tables is None:
            return None
        from importlib.metadata import version

        return tables.with_name(f"cel-trees-{tables.stem}-celpy-{version('cel-python')}.pickle")

    def load(self) -> dict[str, Tree]:
        path = self.path()
        if path is None or not path.is_file():
            return {}
        try:
            with path.open("rb") as handle:
                trees = pickle.load(handle)
        except Exception:  # a stale or truncated cache is rebuilt, never fatal
            return {}
        return trees if isinstance(trees, dict) else {}

    def remember(self, text: str, tree: Tree) -> None:
        self._save_at_exit()
        self.new[text] = tree

    def _save_at_exit(self) -> None:
        if not self._registered:
            self._registered = True
            atexit.register(self.save)

    def save(self) -> None:
        path = self.path()
        if path is None or not (self.new or len(self.known) > _CACHE_MAX):
            return
        from gpusolve.atomic import write_bytes_atomic

        # Least recently used first: trees this run did not touch, then those it read,
        # then those it parsed; the oldest go when there are too many.
        recent = {text: self.known[text] for text in self.used} | self.new
        merged = {text: tree for text, tree in self.known.items() if text not in recent}
        merged |= recent
        if len(merged) > _CACHE_MAX:
            merged = dict(list(merged.items())[-_CACHE_MAX:])
        # A cache is optional: failing to write it never fails the run.
        with contextlib.suppress(OSError, pickle.PicklingError, RecursionError):
            write_bytes_atomic(path, pickle.dumps(merged, protocol=pickle.HIGHEST_PROTOCOL))


TREES = _TreeCache()
