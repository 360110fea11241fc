"""Every shipped example, and the DeepSeek-V3-class scale example, planned once with
`plan --launch`: its requirements, JSON plan and launch folder (shared by the launch
tests of one worker)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.shipped import EXAMPLES, ROOT

SCALE = ROOT / "examples" / "scale"
DATA = ROOT / "tests" / "data" / "launch"


def listed(name: str) -> set[str]:
    """A flag or key list of tests/data/launch/ (comment lines name its source)."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def flags_of(tokens: list[str]) -> dict[str, str | None]:
    """--flag value pairs (a flag followed by another flag, or last, has no value)."""
    out: dict[str, str | None] = {}
    for i, tok in enumerate(tokens):
        if tok.startswith("--"):
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            out[tok] = None if nxt is None or nxt.startswith("--") else nxt
    return out


# The scale example and the catalogue its header names.
DEEPSEEK = (SCALE / "moe-deepseek-v3-class.yaml", SCALE / "large-site-h800.yaml")


@dataclass(frozen=True)
class Launched:
    reqs: dict[str, Any]
    plan: dict[str, Any]
    folder: Path

    def workload(self, name: str) -> dict[str, Any]:
        return next(w for w in self.reqs["workloads"] if w["name"] == name)

    def folder_of(self, d: dict[str, Any]) -> Path:
        return folder_of(self.folder, d)


def folder_of(root: Path, d: dict[str, Any]) -> Path:
    """A deployment's launch folder: its workload's, or for a service split between an
    owned base and a rented burst, `base/` or `burst/` in it."""
    where = root / d["workload"]
    if d.get("share", 1.0) < 1:
        where = where / ("base" if d["mode"] == "owned" else "burst")
    return where


def _plan(example: Path, where: Path, extra: list[str]) -> Launched:
    from gpusolve.cli import main

    # The launch files of each example as sized to the estimate (margin 0): the layouts the
    # launch tests were written for (with the default margin chat-70b-disaggregated serves
    # aggregated, and chat-70b-aggregated puts 10 TP2 replicas on 3 servers, which the
    # launch files do not spread yet).
    bare = where / example.name
    bare.write_text(example.read_text(encoding="utf-8") + "\nmargin: 0\n", encoding="utf-8")
    args = ["plan", "-q", str(bare), *extra, "--format", "json", "-o", str(where / "p.json")]
    try:
        main([*args, "--launch", str(where / "launch")])
    except SystemExit as exc:
        assert not exc.code, example.name
    reqs = yaml.safe_load(example.read_text(encoding="utf-8"))
    return Launched(reqs, json.loads((where / "p.json").read_text()), where / "launch")


_DONE: dict[str, Launched] = {}


def launch_all(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Launched]:
    """Planned once per worker: the first caller's temporary folders serve every caller."""
    if not _DONE:
        for e in EXAMPLES:
            _DONE[e.stem] = _plan(e, tmp_path_factory.mktemp(e.stem), [])
        example, catalog = DEEPSEEK
        extra = ["--no-default-catalog", "--catalog", str(catalog)]
        _DONE[example.stem] = _plan(example, tmp_path_factory.mktemp(example.stem), extra)
    return _DONE


def flag_values(path: Path) -> dict[str, list[str]]:
    """--flag -> its values (an empty list for a switch), as shlex reads the file."""
    out: dict[str, list[str]] = {}
    flag = ""
    for tok in shlex.split(path.read_text()):
        if tok.startswith("--"):
            flag = tok
            out[flag] = []
        else:
            out[flag].append(tok)
    return out
