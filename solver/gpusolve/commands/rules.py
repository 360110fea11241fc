"""`gpusolve rules`: list, show, check and explain the sizing rules."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpusolve.commands.deliver import echo
from gpusolve.commands.options import EXIT_CODES, catalog_option, format_option, rules_option
from gpusolve.models.common import versioned
from gpusolve.rules.environment import KINDS


@click.group("rules", epilog=EXIT_CODES)
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


@rules.command("list")
@click.option("--source", "source", metavar="HNN", help="Only rules citing this heuristic.")
@rules_option
@format_option("text", "json")
def list_rules(source: str | None, rules_paths: tuple[Path, ...], fmt: str) -> None:
    """List the rules in effect (shipped, then --rules files), in evaluation order."""
    from gpusolve.render.rules import list_text
    from gpusolve.rules.loader import load_ruleset
    from gpusolve.runs.rules import list_json, select_rules

    ruleset = load_ruleset(list(rules_paths))
    selected = select_rules(ruleset, _normalise_source(source) if source else None)
    if fmt == "json":
        payload = versioned("rules-list", list_json(ruleset, selected))
        echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    echo(list_text(ruleset, selected), nl=False)


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
    from gpusolve.render.rules import show_text
    from gpusolve.rules.loader import load_ruleset
    from gpusolve.runs.rules import find_rule, heuristic, rule_json

    try:
        rule = find_rule(load_ruleset(list(rules_paths)), rule_id)
    except LookupError as e:
        raise click.BadParameter(str(e), param_hint="ID") from None
    cited = heuristic(rule.source)
    if fmt == "json":
        payload = versioned("rule", {**rule_json(rule), "heuristic": cited})
        echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    echo(show_text(rule, cited), nl=False)


@rules.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Validate rule files (structure, CEL, parameters, ids) as they would load after the
    shipped rules. Exit 2 with file:line and rule id on any problem."""
    from gpusolve.render.rules import check_text
    from gpusolve.runs.rules import check_rule_files

    echo(check_text(*check_rule_files(paths)), nl=False)


@rules.command("fields")
@click.option(
    "--kind",
    type=click.Choice(["when", *KINDS]),
    default=None,
    help="Only the variables available in this context.",
)
def fields(kind: str | None) -> None:
    """The variables and fields rule expressions can use, with their types."""
    from gpusolve.render.rules import fields_text

    echo(fields_text([kind] if kind else ["when", *KINDS]), nl=False)


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
    from gpusolve.runs.rules import explain_rules

    report = explain_rules(requirements, catalog_paths, rules_paths)
    if fmt == "json":
        echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    echo(explain_text(report, shipped_rule_files()), nl=False)
