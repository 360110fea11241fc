"""Read rule files, compile every expression once, merge with disable/override.

Precedence: the shipped files (`rules/*.yaml`, name order) and then the user's `--rules`
files or folders in command-line order. In each file, `disable: [ids]` removes rules
loaded before it; then its rules are added in order. A rule whose id already exists
replaces the earlier rule in place (keeping its position in the order) only with
`override: true`; otherwise that is an input error, as is `override: true` for an id
that does not exist yet, or the same id twice in one file.

Every problem names the file, the line (and column where known) and the rule id.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from gpusolve.errors import InputError, Problem
from gpusolve.load.catalog import expand_paths
from gpusolve.load.data import data_dir
from gpusolve.load.validate import parse_model
from gpusolve.load.yamlio import Document, read_yaml
from gpusolve.models.params import check_value
from gpusolve.models.requirements import Requirements
from gpusolve.models.rules import Rule, RuleFile
from gpusolve.rules.celerror import CelError
from gpusolve.rules.compiled import predicate as compiled_predicate
from gpusolve.rules.compiled import template as compiled_template
from gpusolve.rules.declarations import KINDS
from gpusolve.rules.environment import Facts
from gpusolve.rules.evaluate import Program
from gpusolve.rules.templates import Template

HEURISTICS_FILE = "heuristics.yaml"
ParamValue = bool | int | float | str  # a parameter's value (`gpusolve.models.params`)


@dataclass(frozen=True)
class CompiledPredicate:
    """One `require` (hard filter) or `prefer` (soft, with a penalty) of one rule."""

    rule: str
    source: str
    title: str
    kind: str
    expr: str
    program: Program = field(repr=False, compare=False)
    penalty: float | None = None  # prefer only: money-equivalent per violation, if stated
    share: float | None = None  # prefer only: share of the missing option's cost
    reason: str | None = None
    where: str = ""  # file:line of the expression, for an error met while evaluating it

    @cached_property
    def reads(self) -> frozenset[str]:
        """Root variables the expression reads (e.g. whether a deployment rule needs the site)."""
        return self.program.variables_read()


@dataclass
class CompiledRule:
    rule: Rule
    file: str
    line: int | None
    shipped: bool
    when: Program
    sets: dict[str, ParamValue]
    requires: dict[str, CompiledPredicate]
    prefers: dict[str, CompiledPredicate]
    advise: Template | None
    replaced: list[str] = field(default_factory=list)  # "file:line" of rules it replaced
    when_line: int | None = None  # where `when` is written, for an evaluation error

    @property
    def id(self) -> str:
        return self.rule.id

    @property
    def source(self) -> str:
        return self.rule.source

    @property
    def title(self) -> str:
        return self.rule.title

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class RuleSet:
    """The compiled, merged rules of one run (build with `load_ruleset`)."""

    rules: tuple[CompiledRule, ...]
    files: tuple[Path, ...]
    disabled: dict[str, str] = field(default_factory=dict)  # id -> "file:line" that disabled it
    _by_id: dict[str, CompiledRule] = field(default_factory=dict, repr=False)
    # The `reqs` facts of the last evaluation (engine._reqs_facts): key, reqs, facts.
    _cache: dict[str, tuple[Hashable, Requirements, Facts]] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        self._by_id = {r.id: r for r in self.rules}

    def get(self, rule_id: str) -> CompiledRule | None:
        return self._by_id.get(rule_id)

    def ids(self) -> list[str]:
        return [r.id for r in self.rules]

    def params_read(self) -> frozenset[str]:
        """Parameters that some `when` reads (they make evaluation iterate to a fixpoint)."""
        names: set[str] = set()
        for r in self.rules:
            names |= r.when.params_read()
        return frozenset(names)


def shipped_rule_files() -> list[Path]:
    folder = data_dir("rules")
    return sorted(p for p in folder.glob("*.yaml") if p.name != HEURISTICS_FILE)


def load_ruleset(paths: Sequence[Path] = (), *, shipped: bool = True) -> RuleSet:
    """Shipped rules (unless `shipped=False`) followed by the given files or folders."""
    files: list[tuple[Path, bool]] = []
    if shipped:
        files += [(p, True) for p in shipped_rule_files()]
    if paths:
        files += [(p, False) for p in expand_paths(list(paths), what="rule")]
    merger = _Merger()
    for path, is_shipped in files:
        merger.add_file(path, is_shipped)
    if merger.problems:
        raise InputError(merger.problems)
    return RuleSet(
        rules=tuple(merger.rules.values()),
        files=tuple(p for p, _ in files),
        disabled=merger.disabled,
    )


_READ: dict[tuple[str, int, int], tuple[RuleFile, Document]] = {}
MAX_MESSAGE = 300


def read_rule_file(path: Path) -> tuple[RuleFile, Document]:
    """Validate one rule file's structure; schema errors are tagged with the rule id.

    Valid files are cached by (path, size, modification time) for the life of the process:
    the shipped files are read once however many commands or tests load them.
    """
    try:
        stat = path.stat()
        key: tuple[str, int, int] | None = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return _READ[key]
    doc = read_yaml(path)
    try:
        result = parse_model(doc, RuleFile, "rules"), doc
    except InputError as exc:
        raise InputError([_tag(doc, p) for p in exc.problems]) from None
    if key is not None:
        _READ[key] = result
    return result


def _rule_starts(doc: Document) -> list[tuple[int, str]]:
    data = doc.data
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        return []
    starts = []
    for i, item in enumerate(rules):
        loc = doc.locate(("rules", i))
        rid = item.get("id") if isinstance(item, dict) else None
        if loc is not None:
            starts.append((loc[0], str(rid) if rid is not None else f"#{i + 1} (no id)"))
    return sorted(starts)


def _tag(doc: Document, problem: Problem) -> Problem:
    if len(problem.message) > MAX_MESSAGE:  # e.g. a schema error quoting a huge expression
        cut = problem.message[: MAX_MESSAGE - 40].rstrip()
        problem = Problem(
            problem.file,
            problem.line,
            problem.column,
            f"{cut}... ({len(problem.message):,} characters in all)",
            problem.hint,
            problem.context,
        )
    if problem.context or problem.line is None or not problem.message.startswith("rules."):
        return problem
    starts = _rule_starts(doc)
    lines = [s[0] for s in starts]
    i = bisect.bisect_right(lines, problem.line) - 1
    if i < 0:
        return problem
    return Problem(
        problem.file,
        problem.line,
        problem.column,
        problem.message,
        problem.hint,
        f"rule {starts[i][1]}",
    )


class _Merger:
    def __init__(self) -> None:
        self.rules: dict[str, CompiledRule] = {}
        self.disabled: dict[str, str] = {}
        self.problems: list[Problem] = []

    def add_file(self, path: Path, shipped: bool) -> None:
        try:
            rule_file, doc = read_rule_file(path)
        except InputError as exc:
            self.problems.extend(exc.problems)
            return
        for j, rule_id in enumerate(rule_file.disable):
            line, col = doc.locate(("disable", j)) or (None, None)
            if rule_id in self.rules:
                del self.rules[rule_id]
                self.disabled[rule_id] = f"{doc.name}:{line}"
            else:
                close = difflib.get_close_matches(rule_id, list(self.rules), n=3)
                hint = f"did you mean {', '.join(close)}?" if close else "see `gpusolve rules list`"
                self.problems.append(
                    Problem(
                        doc.name,
                        line,
                        col,
                        f"disable: no earlier rule has id {rule_id!r}",
                        hint,
                        f"disable {rule_id}",
                    )
                )
        seen_here: set[str] = set()
        for i, rule in enumerate(rule_file.rules):
            compiled = _compile_rule(rule, doc, i, shipped, self.problems)
            line = compiled.line if compiled else (doc.locate(("rules", i)) or (None, None))[0]
            problem = self._merge_problem(rule, doc, i, line, seen_here)
            seen_here.add(rule.id)
            if problem is not None:
                self.problems.append(problem)
                continue
            if compiled is None:
                continue
            previous = self.rules.get(rule.id)
            if previous is not None:
                compiled.replaced = [*previous.replaced, previous.where]
            self.rules[rule.id] = compiled  # in place when replacing (dict keeps position)
            self.disabled.pop(rule.id, None)

    def _merge_problem(
        self, rule: Rule, doc: Document, i: int, line: int | None, seen_here: set[str]
    ) -> Problem | None:
        context = f"rule {rule.id}"
        if rule.id in seen_here:
            return Problem(
                doc.name, line, None, f"id {rule.id!r} is used twice in this file", None, context
            )
        previous = self.rules.get(rule.id)
        if previous is not None and not rule.override:
            return Problem(
                doc.name,
                line,
                None,
                f"duplicate rule id {rule.id!r}: already defined at {previous.where}",
                "add `override: true` to replace it, or choose another id",
                context,
            )
        if previous is None and rule.override:
            close = difflib.get_close_matches(rule.id, list(self.rules), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "remove `override: true`"
            return Problem(
                doc.name,
                line,
                None,
                f"override: true but no earlier rule has id {rule.id!r}",
                hint,
                context,
            )
        return None


def _compile_rule(
    rule: Rule, doc: Document, i: int, shipped: bool, problems: list[Problem]
) -> CompiledRule | None:
    base: tuple[str | int, ...] = ("rules", i)
    line = (doc.locate(base) or (None, None))[0]
    context = f"rule {rule.id}"
    before = len(problems)

    def problem(path: tuple[str | int, ...], message: str, hint: str | None, key: bool) -> None:
        loc = doc.locate((*base, *path), key=key) or (line, None)
        problems.append(Problem(doc.name, loc[0], loc[1], message, hint, context))

    def at(path: tuple[str | int, ...]) -> str:
        found = (doc.locate((*base, *path)) or (line, None))[0]
        return f"{doc.name}:{found}" if found is not None else doc.name

    guarded: frozenset[tuple[str, ...]] = frozenset()

    def predicate(text: str, ctx: str, where: tuple[str | int, ...], label: str) -> Program | None:
        try:
            return compiled_predicate(text, ctx, guarded)
        except CelError as exc:
            problem(where, f"{label}: {exc.message}{exc.where()}", exc.hint or None, False)
            return None

    when = predicate(rule.when, "when", ("when",), "when")
    if when is not None:  # effects run only when `when` held: its null guards carry over
        guarded = when.nonnull_if_true
    sets: dict[str, ParamValue] = {}
    for name, value in rule.set.items():
        try:
            sets[name] = check_value(name, value)
        except ValueError as exc:
            hint = None
            if "unknown parameter" in str(exc):
                from gpusolve.models.params import SPEC_BY_NAME

                close = difflib.get_close_matches(name, list(SPEC_BY_NAME), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "see gpusolve/params.py"
                message = f"set: unknown parameter {name!r}"
            else:
                message = f"set: {exc}"
            problem(("set", name), message, hint, True)
    requires: dict[str, CompiledPredicate] = {}
    for kind in KINDS:
        text = rule.require.get(kind)
        if text is None:
            continue
        program = predicate(text, kind, ("require", kind), f"require.{kind}")
        if program is not None:
            requires[kind] = CompiledPredicate(
                rule.id, rule.source, rule.title, kind, text, program, where=at(("require", kind))
            )
    prefers: dict[str, CompiledPredicate] = {}
    for kind in KINDS:
        pref = rule.prefer.get(kind)
        if pref is None:
            continue
        program = predicate(pref.expr, kind, ("prefer", kind, "expr"), f"prefer.{kind}")
        if program is not None:
            prefers[kind] = CompiledPredicate(
                rule.id,
                rule.source,
                rule.title,
                kind,
                pref.expr,
                program,
                penalty=float(pref.penalty) if pref.penalty is not None else None,
                share=float(pref.share) if pref.share is not None else None,
                reason=pref.reason,
                where=at(("prefer", kind, "expr")),
            )
    advise: Template | None = None
    if rule.advise is not None:
        try:
            advise = compiled_template(rule.advise, guarded)
        except CelError as exc:
            problem(("advise",), f"advise: {exc.message}{exc.where()}", exc.hint or None, False)
    if len(problems) > before or when is None:
        return None
    return CompiledRule(
        rule=rule,
        file=doc.name,
        line=line,
        shipped=shipped,
        when=when,
        sets=sets,
        requires=requires,
        prefers=prefers,
        advise=advise,
        when_line=(doc.locate((*base, "when")) or (line, None))[0],
    )
