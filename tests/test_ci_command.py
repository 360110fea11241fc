"""CI (`.ci/run`) runs the README's test command: the same `pip install` arguments (pip's
`-q` aside) and then pytest with no arguments, so the suite CI times is the one a developer
runs."""

from __future__ import annotations

import shlex

from tests.support.shipped import ROOT


def _install_then_test(line: str) -> list[str]:
    """The `pip install` arguments of a `... pip install ARGS && ... -m pytest` line."""
    install, _, test = line.partition(" && python -m pytest")
    assert test == "", line  # pytest with no arguments: the pyproject's settings
    words = shlex.split(install)
    return [w for w in words[words.index("install") + 1 :] if w != "-q"]


def test_ci_runs_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [documented] = [
        line for line in readme.splitlines() if line.endswith(".venv/bin/python -m pytest")
    ]
    documented = documented.split(" && ", 1)[1].replace(".venv/bin/", "python -m ", 1)
    documented = documented.replace(".venv/bin/python", "python")
    [run] = [line for line in ci.splitlines() if line.endswith("python -m pytest")]
    assert documented.startswith("python -m pip install ")
    assert _install_then_test(run) == _install_then_test(documented)
    assert "--no-compile" in _install_then_test(run)  # .ci/run's comment says why
