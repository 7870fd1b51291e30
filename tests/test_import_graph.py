"""The layering of docs/explanation/architecture.md, checked on the import graph of ``trio_mcp/``.

Every import counts: top-level, lazy (inside a function), under
``TYPE_CHECKING``, and the lazy re-export tables (``_LAZY``) of the package
``__init__`` files. The rules:

* no cycle anywhere inside ``trio_mcp/``;
* ``protocol/`` imports only itself and ``types/`` (and never trio);
* ``transports/`` never imports the layers above it: ``_session``, ``_server``,
  ``_client``, ``_cli``, ``lowlevel``, ``testing`` or the top-level facade;
* ``_session/`` never imports ``_server``, ``_client`` or ``_cli``;
* ``_tasks/`` (the task engine both roles use) and ``_telemetry/`` never
  import ``_server`` or ``_client``, and ``_client/`` never imports
  ``_server`` (the roles are siblings: what both need lives below them);
* ``_records/`` (the request table and timeline) imports only the protocol
  layer, and never trio.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "src" / "trio_mcp"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE_ROOT.rglob("*.py")}


def _resolve(current: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level > 1:
        base = base[: -(level - 1)]
    return ".".join([*base, *([name] if name else [])])


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, str]]:
    """(imported module, how) for every import in *path* that targets trio_mcp or trio."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "import"
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, is_package, node.level, node.module)
            yield target, "from"
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if candidate in modules:
                    yield candidate, "from-module"
        elif (
            is_package
            and isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            for value in node.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    spec = value.value
                    level = len(spec) - len(spec.lstrip("."))
                    yield _resolve(name, True, level, spec.lstrip(".") or None), "lazy table"


def graph() -> dict[str, set[str]]:
    modules = all_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _how in imports_of(name, path, modules):
            if target == "trio" or target.startswith("trio."):
                edges[name].add("trio")
            # Importing a.b.c runs a and a.b first, for every module alike: the
            # edge to an enclosing package is the package structure, not a
            # choice of the importer, so it is not counted.
            if target in modules and target != name and not name.startswith(target + "."):
                edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in edges.get(node, ()):
            if succ not in edges:
                continue
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "trio_mcp"


def test_the_graph_sees_every_kind_of_import() -> None:
    edges = graph()
    # A top-level, a lazy, a TYPE_CHECKING and a lazy-table import, one of each.
    assert "trio_mcp.protocol" in edges["trio_mcp._session._engine"]
    assert "trio_mcp._client._client" in edges["trio_mcp"]  # the _LAZY table
    assert "trio" in edges["trio_mcp._session._engine"]


def test_no_import_cycle_in_the_package() -> None:
    found = cycles(graph())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


FORBIDDEN = {
    "protocol": {
        "trio",
        "_session",
        "_server",
        "_client",
        "_cli",
        "transports",
        "testing",
        "lowlevel",
        "trio_mcp",
        "_errors",
        "_diagnostics",
        "_util",
        "_transport",
    },
    "transports": {"_session", "_server", "_client", "_cli", "lowlevel", "testing", "trio_mcp"},
    "_session": {"_server", "_client", "_cli", "testing", "trio_mcp"},
    "_tasks": {"_server", "_client", "_cli", "testing", "trio_mcp"},
    "_extensions": {"_server", "_client", "_cli", "testing", "trio_mcp"},
    "_client": {"_server", "_cli", "testing", "trio_mcp"},
    # Telemetry is a middleware both roles put first: below them both.
    "_telemetry": {"_server", "_client", "_cli", "testing", "trio_mcp"},
    # The table and the timeline are pure functions of records.
    "_records": {"trio", "_session", "_server", "_client", "_cli", "transports", "testing"},
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_upward_import(layer: str) -> None:
    edges = graph()
    bad = sorted(
        f"{source} imports {target}"
        for source, targets in edges.items()
        if layer_of(source) == layer
        for target in targets
        if (target == "trio" and "trio" in FORBIDDEN[layer])
        or (target != "trio" and layer_of(target) in FORBIDDEN[layer])
    )
    assert bad == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
