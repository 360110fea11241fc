"""The README's example excerpts are what the shipped examples print today.

Each excerpt in README.md between `<!-- examples:start -->` and `<!-- examples:end -->` is a
bold title, the command in backticks, and a ```text block. The test runs the command and
compares the block with the excerpt of today's output: for `plan`, the headline and the
Deployments, Sites, Binding constraints, Budgets not binding, unmet-preference and margin sections;
for other commands, all of it.

After a change that moves an example's output on purpose, refresh the README with
`python tests/test_readme_examples.py --write` and read the diff.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- examples:start -->", "<!-- examples:end -->"
# The sections of a plan that the README shows; the rest (cost lines, rules, advice,
# solver) is long and is covered by the example tests themselves.
PLAN_SECTIONS = (
    "Deployments",
    "Sites",
    "Owned (inventory)",
    "Binding constraints",
    "Budgets not binding",
    "Preferences no allowed option meets (no penalty charged)",
    "Kept out by the margin alone (the plan does not weigh these)",
)
EXAMPLE = re.compile(r"^\*\*(?P<title>.+?)\*\* — `(?P<command>gpusolve [^`]+)`\n\n```text\n", re.M)


@dataclass(frozen=True)
class Excerpt:
    command: str
    text: str
    start: int  # offset of the text block's first character in README.md
    end: int  # offset just past its last newline


def excerpts(readme: str) -> list[Excerpt]:
    begin, finish = readme.index(START), readme.index(END)
    found: list[Excerpt] = []
    for match in EXAMPLE.finditer(readme, begin, finish):
        body_start = match.end()
        body_end = readme.index("```\n", body_start)
        found.append(Excerpt(match["command"], readme[body_start:body_end], body_start, body_end))
    return found


def run(command: str) -> tuple[int, str]:
    from gpusolve.cli import main

    args = shlex.split(command)[1:]
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue()


def blocks(text: str) -> list[list[str]]:
    """The output split at blank lines."""
    groups: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            groups[-1].append(line)
        elif groups[-1]:
            groups.append([])
    return [g for g in groups if g]


def excerpt_of(command: str, output: str) -> str:
    if not command.startswith("gpusolve plan ") or output.startswith("Purchase schedule"):
        return output  # a purchase schedule (`periods:`) is shown whole
    parts = blocks(output)
    kept = [parts[0]] + [b for b in parts[1:] if b[0] in PLAN_SECTIONS]
    return "\n\n".join("\n".join(b) for b in kept) + "\n"


def current(command: str) -> str:
    with contextlib.chdir(ROOT):
        code, output = run(command)
    assert code == 0, f"{command} exited {code}"
    return excerpt_of(command, output)


CASES = excerpts(README.read_text(encoding="utf-8"))


def test_the_readme_has_examples() -> None:
    assert len(CASES) >= 5


@pytest.mark.parametrize("case", CASES, ids=[c.command for c in CASES])
def test_readme_excerpt_is_current(case: Excerpt) -> None:
    assert current(case.command) == case.text, (
        "README excerpt is stale; refresh it with `python tests/test_readme_examples.py --write`"
    )


def write() -> None:
    readme = README.read_text(encoding="utf-8")
    for case in reversed(excerpts(readme)):
        readme = readme[: case.start] + current(case.command) + readme[case.end :]
    README.write_text(readme, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        sys.exit("usage: python tests/test_readme_examples.py --write")
