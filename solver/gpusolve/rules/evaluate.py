"""Evaluate compiled expressions: term by term, memoised, with a direct path for simple terms.

Evaluation is cel-python's tree-walking `Evaluator` (nothing is handed to Python's
`eval`/`exec`), with the operators of `operators.py`. On top of it:

- A top-level conjunction `a && b && c` (of disjunctions) is evaluated term by term: false
  stops, an error is kept only if no term is false, as CEL's `&&` does.
- Each term's result is memoised on the values of the fields it reads (`Bindings.key`):
  rules mostly read a handful of fields, so a whole catalogue is checked with few real
  evaluations.
- Terms of the shapes `field`, `!field`, `field OP literal` and `field in [literals]` are
  computed directly from the plain data (`direct.py`), with the same semantics; a
  property test checks the two agree.

Neither Lark nor cel-python is imported here until a term needs cel-python: a unit read
back from the kept compiled expressions (`compiled.py`) holds its tree pickled, and loads
it on the first evaluation its memo cannot answer.
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from gpusolve.rules.bindings import Bindings, EvalFailure, Read
from gpusolve.rules.declarations import Path
from gpusolve.rules.direct import Direct, Shape, direct

if TYPE_CHECKING:
    from celpy.evaluation import Activation

    from gpusolve.rules.environment import Value
    from gpusolve.rules.parse import Node

MAX_MEMO = 50_000

Outcome = bool | EvalFailure


@cache
def base_activation() -> Activation:
    """cel-python's activation with the operator overrides (built once per process): what
    `Environment().program(tree, functions).new_activation()` gives, built without the
    environment, whose parser a run never needs when every tree is read back from the
    cache (`cache.py`; loading the parser's tables is about 7 ms)."""
    import celpy
    from celpy.evaluation import Activation

    from gpusolve.rules.operators import overrides
    from gpusolve.rules.parse import raise_recursion_limit

    raise_recursion_limit()  # as the environment does: the evaluator recurses per level
    annotations = dict(celpy.googleapis)  # an Environment's annotations, package None
    return Activation(package=None, annotations=annotations, functions=overrides())


_MISS = object()


class Unit:
    """One independently evaluated (sub)expression with its memo table.

    `tree` is what cel-python evaluates (pass-through levels collapsed, `compile.py`), or its
    pickle, loaded on first use; `shape`, where not None, computes every value directly."""

    __slots__ = ("_tree", "fast", "memo", "reads", "shape", "want_bool")

    def __init__(
        self,
        reads: Sequence[Read],
        want_bool: bool,
        shape: Shape | None,
        tree: Node | bytes,
        memo: dict[tuple[Hashable, ...], object] | None = None,
    ) -> None:
        self.reads = tuple(reads)
        self.want_bool = want_bool
        self.shape = shape
        self.fast: Direct | None = None if shape is None else direct(shape, want_bool)
        self._tree: Node | bytes = tree
        self.memo: dict[tuple[Hashable, ...], object] = {} if memo is None else memo

    @property
    def tree(self) -> Node:
        if isinstance(self._tree, bytes):
            loaded: Node = pickle.loads(self._tree)
            self._tree = loaded
            return loaded
        return self._tree

    def tree_pickle(self) -> bytes:
        """The tree as `Unit` takes it back (a unit that never loaded it gives its bytes)."""
        if isinstance(self._tree, bytes):
            return self._tree
        return pickle.dumps(self._tree, protocol=pickle.HIGHEST_PROTOCOL)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(p for p, _ in self.reads)

    def run(self, bindings: Bindings) -> object:
        """A bool or an EvalFailure when `want_bool`; else any value (CEL or plain)."""
        if self.fast is not None:
            return self.fast(bindings)
        key = tuple([bindings.key(p, m) for p, m in self.reads])
        hit = self.memo.get(key, _MISS)
        if hit is not _MISS:
            return hit
        result = self._evaluate(bindings.context())
        if len(self.memo) >= MAX_MEMO:
            self.memo.clear()
        self.memo[key] = result
        return result

    def _evaluate(self, context: dict[str, Value]) -> object:
        import lark
        from celpy import celtypes as ct
        from celpy.evaluation import CELEvalError, Evaluator

        tree = self.tree
        assert isinstance(tree, lark.Tree)
        try:
            value = Evaluator(tree, activation=base_activation()).evaluate(context)
        except CELEvalError as exc:
            return EvalFailure(_eval_message(exc))
        except Exception as exc:  # cel-python internals: never a traceback for a rule
            return EvalFailure(f"{type(exc).__name__}: {exc}")
        if not self.want_bool:
            return value
        if isinstance(value, ct.BoolType):
            return bool(value)
        return EvalFailure(f"expected true or false, got {value!r}")


def _eval_message(exc: Exception) -> str:
    args = exc.args
    if len(args) >= 3 and isinstance(args[2], tuple) and args[2]:
        return str(args[2][0])
    return str(args[0]) if args else str(exc)


class Program:
    """A compiled predicate: bool-valued, statically checked, evaluated term by term.

    `terms` is a conjunction of disjunctions of units (`a && (b || c) && d` at top
    level): each unit is evaluated separately, memoised on the fields it reads, with
    CEL's commutative error semantics (`false && error` is false, `true || error` true).
    """

    def __init__(
        self,
        text: str,
        terms: list[list[Unit]],
        nonnull_if_true: frozenset[Path] = frozenset(),
    ) -> None:
        self.text = text
        self.terms = terms
        self.units = [u for term in terms for u in term]
        self.paths: frozenset[Path] = frozenset(p for u in self.units for p in u.paths)
        self._roots = frozenset(p[0] for p in self.paths)
        # Fields this predicate proves non-null when true (`x != null && ...`): expressions
        # that only run after it (a rule's require/prefer/advise) may use them unguarded.
        self.nonnull_if_true = nonnull_if_true

    def params_read(self) -> frozenset[str]:
        return frozenset(p[1] for p in self.paths if p[0] == "params" and len(p) > 1)

    def variables_read(self) -> frozenset[str]:
        return self._roots

    def evaluate(self, bindings: Bindings) -> Outcome:
        failure: EvalFailure | None = None
        for term in self.terms:
            outcome = _any(term, bindings)
            if outcome is False:
                return False
            if isinstance(outcome, EvalFailure):
                failure = failure or outcome
        return failure if failure is not None else True

    def __repr__(self) -> str:
        return f"Program({self.text!r})"


def _any(units: list[Unit], bindings: Bindings) -> Outcome:
    failure: EvalFailure | None = None
    for unit in units:
        result = unit.run(bindings)
        if result is True:
            return True
        if isinstance(result, EvalFailure):
            failure = failure or result
    return failure if failure is not None else False
