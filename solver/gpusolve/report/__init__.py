"""HTML reports: one self-contained file per command, from templates shipped in the package.

Imported only when a command is asked for `--format html` or `frontier --plot`, so the
templates (jinja2) and the charts (matplotlib, a dependency imported only to draw) cost
nothing to the other commands' start-up.
"""
