"""cel-python's parser, built once per process with Lark's parse-table cache switched on.

cel-python 0.5 builds the same LALR tables from its grammar in every process; that is the
larger part of loading the rules (`benchmarks/README.md`, "Rules start-up": without the
table cache, loading the shipped rules costs 1.25x the CPU time). cel-python has no public
option for it, so `seed_parser` builds the parser with cel-python's own options and
installs it where cel-python looks for it (`CELParser.CEL_PARSER`); that is why
pyproject.toml pins `cel-python<0.6`. A test checks that the seeded parser parses exactly
as cel-python's own does.
"""

from __future__ import annotations

import os
import pathlib
import re


def parser_cache_file() -> pathlib.Path | None:
    """A per-user file for Lark's parse tables, or None when no private cache dir exists.

    Lark's cache is a pickle, so it lives in the user's own cache directory (created 0700),
    never in a shared temporary directory.
    """
    import lark

    root = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    root = root / "gpusolve"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(root, os.W_OK):
        return None
    return root / f"cel-lark-{lark.__version__}.cache"


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
