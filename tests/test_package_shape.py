"""The package's shape (issues 23 and 34): modules of one job each, no module over the size
limit in the optimiser, the rule engine and the estimate (no function over its limit in the
estimate), no stage importing the layers that compose it,
commands that only compose, no import circle anywhere, a top level that holds only the
kernel, and packages stacked in layers that import only downwards.

Everything here reads the source with `ast`; no module of the package is imported, so a
module that would fail to import (or import something heavy) is still checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "solver" / "gpusolve"
ROOT_NAME = "gpusolve"
MAX_LINES = 500
# Sub-packages held to the size limit (recursively).
LIMITED = ("rules", "optimize", "estimate", "candidates")
# Sub-packages whose functions are held to a length: a longer one has seams to cut along.
MAX_FUNCTION_LINES = 80
SHORT_FUNCTIONS = ("estimate",)
# The layers that compose the stages; a stage must not depend on them.
UPWARD = (
    "gpusolve.plan",
    "gpusolve.analyses",
    "gpusolve.runs",
    "gpusolve.commands",
    "gpusolve.cli",
)
# What a command may not import: the stages that do the work (they are reached through one
# package function: `runs/`, `plan.inputs.load_inputs`, the report modules).
WORKERS = (
    "gpusolve.optimize",
    "gpusolve.candidates",
    "gpusolve.estimate.",
    "gpusolve.plan.single",
    "gpusolve.plan.inputs",
)

# The kernel: the only modules directly in gpusolve/; everything else lives in a package.
KERNEL = ("__init__", "__main__", "cli", "errors", "atomic")

# The architecture, top to bottom. A module of package P may import modules of P itself and
# of the layers strictly below P's; never a package beside it in its layer, never one above.
#
# The kernel's entry points sit above every package and may import anything below them
# (`python -m gpusolve` runs the cli).
ENTRY = (
    ("__main__",),
    ("cli",),
)
# commands -> runs -> report -> render -> analyses -> plan, colo, measure -> explain
# -> candidates -> optimize -> rules -> load -> profile -> estimate -> models;
# a package imports only those below it.
LAYERS = (
    ("commands",),
    ("runs",),
    ("report",),
    ("render",),
    ("analyses",),
    ("plan", "colo", "measure"),
    ("explain",),
    ("candidates",),
    ("optimize",),
    ("rules",),
    ("load",),
    ("profile",),
    ("estimate",),
    ("models",),
)
# The kernel's foundations sit below every package: anyone may import them. atomic reports
# its failures with errors; errors imports nothing of gpusolve; the package root
# (`gpusolve/__init__.py`, the version only) imports nothing at all.
FOUNDATION = (
    ("atomic",),
    ("errors",),
    ("__init__",),
)
ORDER = (*ENTRY, *LAYERS, *FOUNDATION)


# --- reading the source ------------------------------------------------------------------


def _modules(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = {name for _, name in _string_imports(tree)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


_DYNAMIC_IMPORTS = ("import_module", "__import__")


def _string_imports(tree: ast.AST, root: str = ROOT_NAME) -> Iterator[tuple[int, str]]:
    """(line, module) of the imports an import statement does not show: the string given to
    `importlib.import_module(...)` or `__import__(...)`, and, in a file that imports that
    way, every string naming a module of the package (a table of modules to import, as
    the cli's commands): the layers hold for them as for `import`."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in _DYNAMIC_IMPORTS)
            or (isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC_IMPORTS)
        )
    ]
    if not calls:
        return
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value == root or node.value.startswith(root + "."))
            and all(part.isidentifier() for part in node.value.split("."))
        ):
            yield node.lineno, node.value


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def module_name(path: Path, package: Path, root: str) -> str:
    """`root.a.b` for package/a/b.py; `root.a` for package/a/__init__.py."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([root, *parts])


@dataclass(frozen=True, order=True)
class Edge:
    """One import statement's arrow: `source` imports `target` at `line` of source's file."""

    source: str
    target: str
    line: int


def _by_line(edge: Edge) -> tuple[str, int, str]:
    """Edges in reading order: file by file, line by line."""
    return edge.source, edge.line, edge.target


@dataclass
class Graph:
    """The package's modules and every import between them."""

    modules: dict[str, Path]
    edges: list[Edge]
    # Imports of the package that name no module of it (`from gpusolve.gone import x`).
    unresolved: list[Edge]

    def successors(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {name: set() for name in self.modules}
        for edge in self.edges:
            out[edge.source].add(edge.target)
        return out


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative `from .name import ...` in `module`."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _raw_imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str, bool]]:
    """(line, name, exact) of every module name an import statement may mean, anywhere in the
    file: module level, inside functions, under `if TYPE_CHECKING:`. `import x.y` means the
    module x.y exactly; `from x import y` yields `x.y` inexactly (y may be a module, or a
    name defined in x: `build_graph` falls back to x)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, True
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    yield node.lineno, base, True
                else:
                    yield node.lineno, f"{base}.{alias.name}", False
    for line, name in _string_imports(tree, module.split(".")[0]):
        yield line, name, True


def build_graph(package: Path, root: str = ROOT_NAME) -> Graph:
    """The import graph of every .py file under `package` (imported as `root`).

    `import root.a.b` is an arrow to the module root.a.b (a package's `__init__` when a.b is
    a package); `from root.a import b` is an arrow to root.a.b when that is a module, else
    to root.a. Imports of other distributions are left out.
    """
    modules = {module_name(p, package, root): p for p in sorted(package.rglob("*.py"))}
    edges: set[Edge] = set()
    unresolved: set[Edge] = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for line, imported, exact in _raw_imports(tree, name, is_package):
            if imported != root and not imported.startswith(root + "."):
                continue
            if imported in modules:
                edges.add(Edge(name, imported, line))
                continue
            # `from x import y` where y is no module: the arrow goes to x.
            named = imported if exact else imported.rsplit(".", 1)[0]
            (edges if named in modules else unresolved).add(Edge(name, named, line))
    return Graph(modules, sorted(edges, key=_by_line), sorted(unresolved, key=_by_line))


def strongly_connected(successors: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(successors):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(successors[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(successors.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _shortest_cycle(start: str, members: set[str], successors: dict[str, set[str]]) -> list[str]:
    """The shortest path start -> ... -> start inside one component (breadth first)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(successors[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is on no cycle")


def cycles(graph: Graph) -> list[str]:
    """One readable paragraph per import circle: a shortest cycle through the circle, then
    every import inside it (with its line), so each arrow that could be cut is listed."""
    successors = graph.successors()
    found: list[str] = []
    for component in strongly_connected(successors):
        members = set(component)
        if len(component) == 1 and component[0] not in successors[component[0]]:
            continue
        ring = _shortest_cycle(component[0], members, successors)
        inner = [e for e in graph.edges if e.source in members and e.target in members]
        lines = [f"circle of {len(component)} modules: {' -> '.join(ring)}"]
        if len(component) > 2:
            lines.append(f"    all of: {', '.join(component)}")
        lines += [f"    {e.source}:{e.line} imports {e.target}" for e in inner]
        found.append("\n".join(lines))
    return found


def _unit(module: str, root: str = ROOT_NAME) -> str:
    """What a module is placed by in ORDER: its top sub-package, or the kernel module."""
    if module == root:
        return "__init__"
    return module.split(".")[1]


def _rank() -> dict[str, int]:
    return {unit: depth for depth, layer in enumerate(ORDER) for unit in layer}


def _layer(unit: str) -> str:
    return ", ".join(ORDER[_rank()[unit]])


def layering_violations(graph: Graph) -> list[str]:
    """`source imports target (layer X -> layer Y)` for every arrow that does not go down."""
    rank = _rank()
    found: list[str] = []
    for edge in graph.edges:
        source, target = _unit(edge.source), _unit(edge.target)
        if source == target or source not in rank or target not in rank:
            continue  # units missing from ORDER fail test_every_package_has_a_layer
        if rank[target] > rank[source]:
            continue
        way = "sideways" if rank[target] == rank[source] else "upwards"
        found.append(
            f"{edge.source}:{edge.line} imports {edge.target} "
            f"(layer {_layer(source)} -> layer {_layer(target)}: {way})"
        )
    return found


def _sub_packages(package: Path) -> list[str]:
    return sorted(p.parent.name for p in package.glob("*/__init__.py"))


def _report(title: str, found: list[str]) -> str:
    return f"{len(found)} {title}:\n" + "\n".join(found)


# --- the shape of the package ------------------------------------------------------------


@pytest.mark.parametrize("sub", LIMITED)
def test_every_module_is_under_the_size_limit(sub: str) -> None:
    sizes = {_name(p): len(p.read_text().splitlines()) for p in _modules(sub)}
    assert len(sizes) > 5
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def function_lengths(source: str) -> dict[str, int]:
    """Lines of each function and method of `source`, from its `def` to its last line
    (docstring and nested functions included), by qualified name."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(ast.parse(source), "")
    return out


def test_function_lengths_count_every_line_of_nested_and_methods() -> None:
    source = (
        "def f():\n"
        '    """Doc."""\n'
        "    def g():\n"
        "        return 1\n"
        "    return g()\n"
        "class C:\n"
        "    def m(self):\n"
        "        pass\n"
    )
    assert function_lengths(source) == {"f": 5, "f.g": 2, "C.m": 2}


@pytest.mark.parametrize("sub", SHORT_FUNCTIONS)
def test_every_function_is_under_the_length_limit(sub: str) -> None:
    long = {
        f"{_name(p)}:{name}": n
        for p in _modules(sub)
        for name, n in function_lengths(p.read_text()).items()
        if n > MAX_FUNCTION_LINES
    }
    assert long == {}


@pytest.mark.parametrize("sub", LIMITED)
def test_the_stage_does_not_import_the_layers_that_compose_it(sub: str) -> None:
    upward = {
        _name(p): sorted(m for m in _imports(p) if m.startswith(UPWARD)) for p in _modules(sub)
    }
    assert {name: found for name, found in upward.items() if found} == {}


# An issue number says where a rule came from, which the commit message keeps; a comment
# states the rule itself. Another project's tracker cited as the source of a figure names
# that project ("nccl issue 1161"): those are sources, kept.
_ISSUE_NUMBER = re.compile(r"\b(\S+\s+)?[Ii]ssues?\s+#?\d+")
EXTERNAL_TRACKERS = ("nccl", "nccl-tests")


def issue_citations(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comment or docstring line of `source` citing an issue number of
    this project."""
    found: list[tuple[int, str]] = []
    texts: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            texts.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines = value.value.splitlines()
                texts += [(value.lineno + i, line) for i, line in enumerate(lines)]
    for line, text in texts:
        for match in _ISSUE_NUMBER.finditer(text):
            before = (match.group(1) or "").strip().lower()
            if before not in EXTERNAL_TRACKERS:
                found.append((line, text.strip()))
    return sorted(found)


def test_issue_citations_are_found_in_comments_and_docstrings() -> None:
    source = (
        '"""A module (issue 22)."""\n'
        "x = 1  # guarded since issue 39\n"
        "def f():\n"
        '    """Bounded (see Issues #7)."""\n'
        '    y = "issue 5 in a message is not a comment"\n'
        "# a figure from nccl issue 1161 is a source\n"
    )
    assert [line for line, _ in issue_citations(source)] == [1, 2, 4]


def test_no_comment_in_the_package_cites_an_issue_number() -> None:
    found = [
        f"{_name(path)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in issue_citations(path.read_text())
    ]
    assert not found, "state the rule instead of the issue:\n" + "\n".join(found)


@pytest.mark.parametrize("sub", sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
def test_every_module_says_what_it_does(sub: str) -> None:
    modules = _modules(sub)
    assert modules
    missing = [_name(p) for p in modules if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_commands_reach_the_stages_through_one_package_function() -> None:
    direct = {
        _name(p): sorted(m for m in _imports(p) if (m + ".").startswith(WORKERS))
        for p in _modules("commands")
    }
    assert {name: found for name, found in direct.items() if found} == {}


def test_no_import_circle_anywhere() -> None:
    """Every import counts, wherever it is written (a function-level import or one under
    `if TYPE_CHECKING:` still ties the two modules together); nothing is excluded."""
    found = cycles(build_graph(PACKAGE))
    assert not found, _report("import circles", found)


def test_every_import_of_the_package_names_a_module_that_exists() -> None:
    """A move that left an import behind (often inside a function, where no start-up
    import finds it) names a module that is gone."""
    found = [f"{e.source}:{e.line} imports {e.target}" for e in build_graph(PACKAGE).unresolved]
    assert not found, _report("imports of modules that do not exist", found)


def test_the_top_level_holds_only_the_kernel() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in KERNEL)
    folders = [
        p.name
        for p in sorted(PACKAGE.iterdir())
        if p.is_dir() and p.name != "__pycache__" and not (p / "__init__.py").is_file()
    ]
    found = [f"gpusolve/{name}.py: move it into a package" for name in loose]
    found += [f"gpusolve/{name}/: a folder that is no package" for name in folders]
    assert not found, _report("top-level names outside the kernel", found)


def test_every_package_has_a_layer_and_every_layer_name_exists() -> None:
    placed = [unit for layer in ORDER for unit in layer]
    assert len(placed) == len(set(placed)), "a name appears twice in ORDER"
    assert {unit for layer in ENTRY + FOUNDATION for unit in layer} == set(KERNEL)
    layered = {unit for layer in LAYERS for unit in layer}
    packages = set(_sub_packages(PACKAGE))
    assert sorted(packages - layered) == [], "sub-packages to place in LAYERS"
    assert sorted(layered - packages) == [], "names in LAYERS that are no sub-package"
    assert [k for k in KERNEL if not (PACKAGE / f"{k}.py").is_file()] == []


def test_packages_import_only_the_layers_below_them() -> None:
    found = layering_violations(build_graph(PACKAGE))
    assert not found, _report("imports that do not go down the layers", found)


# --- the helpers themselves, on synthetic packages ---------------------------------------


def _write(package: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    package = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def late():\n    from pkg.a import thing\n    return thing\n",
            "c.py": "import pkg.a\n",
        },
    )
    found = cycles(build_graph(package, "pkg"))
    assert found == [
        "circle of 2 modules: pkg.a -> pkg.b -> pkg.a\n"
        "    pkg.a:1 imports pkg.b\n"
        "    pkg.b:2 imports pkg.a"
    ]


def test_a_circle_through_a_type_checking_import_and_a_package_init_is_found(
    tmp_path: Path,
) -> None:
    package = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "sub/__init__.py": "from .inner import value\n",
            "sub/inner.py": "value = 1\n",
            "low.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.sub import value\n"
            ),
            "sub/more.py": "from ..low import x\n",
            "mid.py": "import pkg.low\n",
        },
    )
    graph = build_graph(package, "pkg")
    # `from pkg.sub import value`: value is no module, so the arrow goes to pkg.sub itself.
    assert Edge("pkg.low", "pkg.sub", 3) in graph.edges
    assert Edge("pkg.sub", "pkg.sub.inner", 1) in graph.edges
    assert Edge("pkg.sub.more", "pkg.low", 1) in graph.edges
    assert cycles(graph) == []  # sub/__init__ does not import sub/more: no circle yet
    _write(package, {"sub/inner.py": "import pkg.low\nvalue = 1\n"})
    found = cycles(build_graph(package, "pkg"))
    assert len(found) == 1
    assert found[0].startswith("circle of 3 modules: pkg.low -> pkg.sub -> pkg.sub.inner")


def test_an_acyclic_package_passes_and_a_self_import_is_a_circle(tmp_path: Path) -> None:
    package = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "top.py": "import os\nfrom pkg import mid, low\n",
            "mid.py": "def f():\n    from pkg.low import g\n    return g\n",
            "low.py": "import pkg\n",
        },
    )
    graph = build_graph(package, "pkg")
    assert cycles(graph) == []
    assert graph.unresolved == []
    components = strongly_connected(graph.successors())
    assert sorted(components) == [["pkg"], ["pkg.low"], ["pkg.mid"], ["pkg.top"]]
    _write(package, {"low.py": "import pkg.low\n"})
    assert cycles(build_graph(package, "pkg")) == [
        "circle of 1 modules: pkg.low -> pkg.low\n    pkg.low:1 imports pkg.low"
    ]


def test_an_import_of_a_module_that_is_gone_is_unresolved(tmp_path: Path) -> None:
    package = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": (
                "from pkg.gone import x\n"
                "from pkg import b, name\n"
                "import pkg.gone.deep\n"
                "import pkg.b.c\n"
                "from .b import y\n"
            ),
            "b.py": "",
        },
    )
    graph = build_graph(package, "pkg")
    assert graph.unresolved == [
        Edge("pkg.a", "pkg.gone", 1),
        Edge("pkg.a", "pkg.gone.deep", 3),
        Edge("pkg.a", "pkg.b.c", 4),
    ]
    assert graph.edges == [
        Edge("pkg.a", "pkg", 2),
        Edge("pkg.a", "pkg.b", 2),
        Edge("pkg.a", "pkg.b", 5),
    ]


def test_an_import_by_name_in_a_string_is_an_arrow(tmp_path: Path) -> None:
    """`importlib.import_module("pkg.b")` imports pkg.b as surely as `import pkg.b`; so
    does a table of module names a file imports that way. Strings in a file that imports
    nothing by name are text, not imports."""
    package = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": 'import importlib\n\nmod = importlib.import_module("pkg.b")\n',
            "b.py": (
                "from importlib import import_module\n"
                'TABLE = {"c": "pkg.c"}\n'
                "def load(name):\n"
                "    return import_module(TABLE[name])\n"
            ),
            "c.py": 'HELP = "see pkg.a"\nmod = __import__("pkg.a")\n',
            "d.py": 'NOTE = "pkg.a does it"\n',
        },
    )
    graph = build_graph(package, "pkg")
    assert Edge("pkg.a", "pkg.b", 3) in graph.edges
    assert Edge("pkg.b", "pkg.c", 2) in graph.edges
    assert Edge("pkg.c", "pkg.a", 2) in graph.edges
    assert [e for e in graph.edges if e.source == "pkg.d"] == []
    assert cycles(graph) == [
        "circle of 3 modules: pkg.a -> pkg.b -> pkg.c -> pkg.a\n"
        "    all of: pkg.a, pkg.b, pkg.c\n"
        "    pkg.a:3 imports pkg.b\n"
        "    pkg.b:2 imports pkg.c\n"
        "    pkg.c:2 imports pkg.a"
    ]


def test_layering_reports_sideways_and_upward_imports() -> None:
    graph = Graph(
        modules={},
        edges=[
            Edge("gpusolve.plan.single", "gpusolve.analyses.whynot", 4),
            Edge("gpusolve.plan.single", "gpusolve.colo.compare", 5),
            Edge("gpusolve.plan.single", "gpusolve.plan.inputs", 6),
            Edge("gpusolve.plan.single", "gpusolve.models.plan", 7),
            Edge("gpusolve.errors", "gpusolve.atomic", 8),
            Edge("gpusolve.atomic", "gpusolve.errors", 9),
            Edge("gpusolve.__main__", "gpusolve.cli", 1),
            Edge("gpusolve.models.plan", "gpusolve", 2),
        ],
        unresolved=[],
    )
    assert layering_violations(graph) == [
        "gpusolve.plan.single:4 imports gpusolve.analyses.whynot "
        "(layer plan, colo, measure -> layer analyses: upwards)",
        "gpusolve.plan.single:5 imports gpusolve.colo.compare "
        "(layer plan, colo, measure -> layer plan, colo, measure: sideways)",
        "gpusolve.errors:8 imports gpusolve.atomic (layer errors -> layer atomic: upwards)",
    ]
