"""The evaluator's activation is built without cel-python's environment (whose parser a run
whose trees all come from the cache never needs): it must be the activation the
environment builds, and evaluation must get the recursion limit the environment sets."""

from __future__ import annotations

import sys

from gpusolve.rules.evaluate import base_activation
from gpusolve.rules.operators import overrides
from gpusolve.rules.parse import environment


def test_the_activation_is_the_one_the_environment_builds() -> None:
    env = environment()
    expected = env.program(env.compile("true"), functions=overrides()).new_activation()
    built = base_activation()
    assert built.package == expected.package is None
    assert built.identifiers == expected.identifiers
    assert list(built.functions.maps[0]) == list(expected.functions.maps[0])
    assert built.functions.maps[1:] == expected.functions.maps[1:]


def test_evaluation_gets_the_environments_recursion_limit() -> None:
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)
        base_activation.cache_clear()
        base_activation()
        # celpy.Environment() sets 2500 (cel-python 0.5, Environment.__init__).
        assert sys.getrecursionlimit() == 2500
        sys.setrecursionlimit(4000)
        base_activation.cache_clear()
        base_activation()
        assert sys.getrecursionlimit() == 4000  # never lowered
    finally:
        sys.setrecursionlimit(before)
        base_activation.cache_clear()
