"""`gpusolve rules`: list, show, check and explain the sizing rules."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from gpusolve.commands.options import catalog_option, format_option, rules_option
from gpusolve.errors import InputError
from gpusolve.params import SPECS, Params
from gpusolve.rules.environment import (
    BASE_VARIABLES,
    KIND_VARIABLES,
    KINDS,
    describe_fields,
)
from gpusolve.rules.loader import CompiledRule, RuleSet, load_ruleset, read_rule_file


@click.group("rules")
def rules() -> None:
    """List, show, check and explain the sizing rules (rules/*.yaml).

    \b
    Rules are data: each cites a heuristic (H01-H44, `gpusolve rules show ID` prints it)
    and has a CEL condition (`when`) and effects: `set` parameters, `require` (a hard
    filter on cards, servers, colo offers, cloud offers or layouts), `prefer` (a soft
    penalty) and `advise`. Add your own files with --rules (repeatable; a folder means
    its *.yaml files): a rule with an existing id replaces it only with `override: true`,
    and `disable: [id, ...]` switches shipped rules off.
    """


def _load(rules_paths: Iterable[Path]) -> RuleSet:
    return load_ruleset(list(rules_paths))


def _effects(rule: CompiledRule) -> str:
    parts = []
    if rule.sets:
        parts.append("set " + ",".join(rule.sets))
    if rule.requires:
        parts.append("require " + ",".join(rule.requires))
    if rule.prefers:
        parts.append("prefer " + ",".join(rule.prefers))
    if rule.advise is not None:
        parts.append("advise")
    return "; ".join(parts)


def _rule_json(rule: CompiledRule) -> dict[str, Any]:
    r = rule.rule
    return {
        "id": r.id,
        "source": r.source,
        "title": r.title,
        "when": r.when,
        "set": rule.sets,
        "require": dict(r.require),
        "prefer": {k: p.model_dump() for k, p in r.prefer.items()},
        "advise": r.advise,
        "notes": r.notes,
        "file": rule.file,
        "line": rule.line,
        "shipped": rule.shipped,
        "replaced": rule.replaced,
    }


@rules.command("list")
@click.option("--source", "source", metavar="HNN", help="Only rules citing this heuristic.")
@rules_option
@format_option("text", "json")
def list_rules(source: str | None, rules_paths: tuple[Path, ...], fmt: str) -> None:
    """List the rules in effect (shipped, then --rules files), in evaluation order."""
    ruleset = _load(rules_paths)
    selected = list(ruleset.rules)
    if source:
        wanted = _normalise_source(source)
        selected = [r for r in selected if r.source == wanted]
    if fmt == "json":
        payload = {
            "rules": [_rule_json(r) for r in selected],
            "disabled": ruleset.disabled,
            "files": [str(f) for f in ruleset.files],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    width = max((len(r.id) for r in selected), default=10)
    for r in selected:
        where = Path(r.file).name + (f":{r.line}" if r.line else "")
        origin = "" if r.shipped else "  (user)"
        click.echo(f"{r.id:<{width}}  {r.source}  {r.title}{origin}")
        click.echo(f"{'':<{width}}        {_effects(r)}  [{where}]")
    for rule_id, where in ruleset.disabled.items():
        click.echo(f"{rule_id:<{width}}  disabled by {where}")
    files = len(ruleset.files)
    click.echo(
        f"{len(selected)} rule(s) shown; {len(ruleset.rules)} in effect from {files} file(s)"
    )


def _normalise_source(source: str) -> str:
    text = source.strip().upper()
    if text.startswith("H") and text[1:].isdigit():
        return f"H{int(text[1:]):02d}"
    raise click.BadParameter(f"{source!r} is not a heuristic id like H13", param_hint="--source")


@rules.command("show")
@click.argument("rule_id")
@rules_option
@format_option("text", "json")
def show(rule_id: str, rules_paths: tuple[Path, ...], fmt: str) -> None:
    """Show one rule, the heuristic it cites and the file that defines it."""
    ruleset = _load(rules_paths)
    rule = ruleset.get(rule_id)
    if rule is None:
        if rule_id in ruleset.disabled:
            raise click.BadParameter(
                f"rule {rule_id!r} is disabled by {ruleset.disabled[rule_id]}", param_hint="ID"
            )
        close = difflib.get_close_matches(rule_id, ruleset.ids(), n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else " See `gpusolve rules list`."
        raise click.BadParameter(f"no rule with id {rule_id!r}.{hint}", param_hint="ID")
    heuristic = _heuristic(rule.source)
    if fmt == "json":
        click.echo(
            json.dumps({**_rule_json(rule), "heuristic": heuristic}, indent=2, ensure_ascii=False)
        )
        return
    r = rule.rule
    origin = "shipped" if rule.shipped else "user file"
    click.echo(f"rule {r.id}  ({rule.where}, {origin})")
    click.echo(f"  title:  {r.title}")
    click.echo(f"  source: {r.source}")
    if heuristic:
        click.echo(f"    document {heuristic['document']}, {heuristic['section']}")
        _wrap(heuristic["summary"], 4)
        if heuristic.get("correction"):
            click.echo("    correction:")
            _wrap(heuristic["correction"], 6)
    click.echo(f"  when:   {_one_line(r.when)}")
    for name, value in rule.sets.items():
        spec = next(s for s in SPECS if s.name == name)
        default = getattr(Params(), name)
        click.echo(f"  set {name} = {value}  (default {default}; {spec.doc})")
    for kind, expr in r.require.items():
        click.echo(f"  require {kind}: {_one_line(expr)}")
    for kind, pref in r.prefer.items():
        click.echo(f"  prefer {kind}: {_one_line(pref.expr)}  (penalty {pref.penalty:,.0f})")
        if pref.reason:
            click.echo(f"    reason: {pref.reason}")
    if r.advise:
        click.echo("  advise:")
        _wrap(r.advise, 4)
    if r.notes:
        click.echo("  notes:")
        _wrap(r.notes, 4)
    for where in rule.replaced:
        click.echo(f"  replaces the rule defined at {where}")


def _heuristic(source: str) -> dict[str, Any] | None:
    """The heuristic's summary from rules/heuristics.yaml (None if it cannot be read)."""
    from gpusolve.load import data_dir, parse_model, read_yaml
    from gpusolve.models.rules import HeuristicsFile

    path = data_dir("rules") / "heuristics.yaml"
    try:
        heuristics = parse_model(read_yaml(path), HeuristicsFile, "heuristics")
    except InputError:
        return None
    for h in heuristics.heuristics:
        if h.id == source:
            return h.model_dump()
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _wrap(text: str, indent: int, width: int = 92) -> None:
    import textwrap

    for line in textwrap.wrap(_one_line(text), width=width - indent):
        click.echo(" " * indent + line)


@rules.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Validate rule files (structure, CEL, parameters, ids) as they would load after the
    shipped rules. Exit 2 with file:line and rule id on any problem."""
    ruleset = load_ruleset(list(paths))
    shipped_ids = {r.id for r in load_ruleset().rules}
    for path in paths:
        files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        for file in files:
            if file.name == "heuristics.yaml":
                continue
            rule_file, _ = read_rule_file(file)
            ids = [r.id for r in rule_file.rules]
            overrides = sum(1 for i in ids if i in shipped_ids)
            click.echo(
                f"ok: {file}: {len(ids)} rule(s) ({len(ids) - overrides} new, "
                f"{overrides} replacing shipped), {len(rule_file.disable)} disabled"
            )
    click.echo(f"{len(ruleset.rules)} rule(s) in effect with the shipped set")


@rules.command("fields")
@click.option(
    "--kind",
    type=click.Choice(["when", *KINDS]),
    default=None,
    help="Only the variables available in this context.",
)
def fields(kind: str | None) -> None:
    """The variables and fields rule expressions can use, with their types."""
    contexts = [kind] if kind else ["when", *KINDS]
    for ctx in contexts:
        names = list(BASE_VARIABLES) if ctx == "when" else [*KIND_VARIABLES[ctx], *BASE_VARIABLES]
        click.echo(f"{ctx}: {', '.join(names)}")
    click.echo("")
    shown: set[str] = set()
    variables = {**BASE_VARIABLES}
    for ctx in contexts:
        if ctx != "when":
            variables.update(KIND_VARIABLES[ctx])
    for name, t in variables.items():
        if name in shown:
            continue
        shown.add(name)
        click.echo(f"{name}  ({t.describe()})")
        for path, type_text, doc in describe_fields(t, name):
            click.echo(f"  {path:<44} {type_text}" + (f"  — {doc}" if doc else ""))


@rules.command("explain")
@click.argument("requirements", type=click.Path(path_type=Path))
@rules_option
@catalog_option
@format_option("text", "json")
def explain(
    requirements: Path,
    rules_paths: tuple[Path, ...],
    catalog_paths: tuple[Path, ...],
    fmt: str,
) -> None:
    """Show which rules fire for each workload, what they set, which catalogue items
    their require-rules remove, and their advice — without solving."""
    from gpusolve.render.rules import explain_text
    from gpusolve.rules.loader import shipped_rule_files
    from gpusolve.rules_report import explain_rules

    report = explain_rules(requirements, catalog_paths, rules_paths)
    if fmt == "json":
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    click.echo(explain_text(report, shipped_rule_files()), nl=False)
