"""No import cycles in the three packages: the module graph, read from the source, is acyclic.

Every ``import`` and ``from ... import`` statement counts, at module level or inside a
function (a function-level import is still a dependency, only a later one), except those
under ``if TYPE_CHECKING:``, which never run. Importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__`` too, so an edge also goes to each package on the way, except the
importer's own packages (already running when it is imported). Imports by name at run
time (``importlib.import_module`` from a registry's provider list or the namespace table)
are not statements and are not followed: they run once both sides are loaded.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("osworld_mcp_env", "hybrid_agent", "grpo_trainer")


def source_modules() -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file of the three packages."""
    modules = {}
    for package in PACKAGES:
        (src,) = ROOT.glob(f"packages/*/src/{package}")
        for path in src.rglob("*.py"):
            parts = path.relative_to(src.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                yield from _runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _runtime_imports(node)


def _with_packages(target: str, importer: str, modules: dict[str, Path]) -> set[str]:
    """``target`` and the packages an import of it runs, less the importer's own packages."""
    parts = target.split(".")
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 1)}
    chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {name for name in chain - own if name in modules and name != importer}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules that importing ``name`` (at ``path``) runs directly."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out |= _with_packages(alias.name, name, modules)
            continue
        if node.level:  # relative: from the importer's package, one level up per extra dot
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        out |= _with_packages(origin, name, modules)
        for alias in node.names:  # ``from pkg import submodule``
            if f"{origin}.{alias.name}" in modules:
                out |= _with_packages(f"{origin}.{alias.name}", name, modules)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (see the module docstring for what counts)."""
    modules = source_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module, as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm; the graph has a few hundred nodes
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_in(component, graph) for component in components]


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A closed path through ``component``'s first module (breadth-first, so a shortest one)."""
    start, members = component[0], set(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{component} is not strongly connected")


def test_the_packages_have_no_import_cycle():
    cycles = find_cycles(import_graph())
    assert not cycles, "Import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_graph_sees_function_level_and_relative_imports_and_the_packages_on_the_way(tmp_path):
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n",
        "b.py": "def f():\n    from .sub import d\n",
        "c.py": "",
        "sub/__init__.py": "from pkg.sub import d\n",
        "sub/d.py": "import pkg.b\n",
    }
    for rel, text in files.items():
        (src / rel).write_text(text)
    modules = {
        "pkg": src / "__init__.py",
        **{f"pkg.{rel[:-3].replace('/', '.')}": src / rel for rel in files if rel != "__init__.py"},
    }
    modules["pkg.sub"] = modules.pop("pkg.sub.__init__")
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph["pkg.a"] == set()  # TYPE_CHECKING only
    assert graph["pkg.b"] == {"pkg.sub", "pkg.sub.d"}  # function-level, relative, and the package on the way
    assert graph["pkg.sub"] == {"pkg.sub.d"}  # its own package is already running
    assert find_cycles(graph) == [["pkg.b", "pkg.sub.d", "pkg.b"]]  # the shortest way round


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_in_the_graph(package):
    graph = import_graph()
    assert package in graph and any(name.startswith(package + ".") for name in graph)
