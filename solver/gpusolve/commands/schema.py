"""`gpusolve schema`: print or write the JSON Schemas of inputs and outputs."""

from __future__ import annotations

from pathlib import Path

import click

from gpusolve.atomic import write_text_atomic
from gpusolve.commands.deliver import echo
from gpusolve.commands.options import EXIT_CODES
from gpusolve.models.schemas import available, render, schema_for


@click.command("schema", epilog=EXIT_CODES)
@click.argument("name", required=False)
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write every schema as NAME.schema.json into this folder.",
)
def schema(name: str | None, write_dir: Path | None) -> None:
    """Print the JSON Schema NAME (requirements, catalog, rules, fleet, plan, estimate...).

    \b
    Editors validate and complete your YAML when its first line is
      # yaml-language-server: $schema=<path>/requirements.schema.json
    """
    models = available()
    if write_dir is not None:
        write_dir.mkdir(parents=True, exist_ok=True)
        for key, model in models.items():
            write_text_atomic(write_dir / f"{key}.schema.json", render(schema_for(key, model)))
        echo(f"wrote {len(models)} schemas to {write_dir}")
        return
    if name is None:
        echo("schemas: " + ", ".join(models))
        echo("print one with `gpusolve schema NAME`, or all with `--write DIR`")
        return
    if name not in models:
        raise click.BadParameter(f"unknown schema {name!r}; choose from {', '.join(models)}")
    echo(render(schema_for(name, models[name])), nl=False)
