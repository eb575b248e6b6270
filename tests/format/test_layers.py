"""The package's import structure stays as kafka_format/ARCHITECTURE.md draws it: no import cycles,
and no import from a lower layer to a higher one.

Imports are read from the source with ``ast``, lazy (function-level) imports included; imports
under ``if TYPE_CHECKING:`` are not imports at run time and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

from testhelpers import imported_from

PACKAGE = Path(__file__).resolve().parents[2] / "kafka_format"

# Lowest first: each layer is a folder of the package (its ``__init__`` docstring says what it owns and
# what it may import).  A module belongs to the first layer with a prefix matching its dotted name (a
# prefix ending in "." matches a whole subpackage).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("kafka_format", "kafka_format.common", "kafka_format.common.")),
    ("record formats", ("kafka_format.records", "kafka_format.records.")),
    ("internal topics", ("kafka_format.internal", "kafka_format.internal.")),
    ("log-dir files", ("kafka_format.storage", "kafka_format.storage.")),
    ("writer", ("kafka_format.writer", "kafka_format.writer.")),
    ("outputs", ("kafka_format.output", "kafka_format.output.")),
    ("log rules", ("kafka_format.log", "kafka_format.log.")),
    ("read path", ("kafka_format.read", "kafka_format.read.")),
    ("schemas", ("kafka_format.registry", "kafka_format.registry.")),
    ("rendering", ("kafka_format.report", "kafka_format.report.")),
    ("local engine", ("kafka_format.engine", "kafka_format.engine.")),
    ("spark adapter", ("kafka_format.spark", "kafka_format.spark.")),
    ("jobs", ("kafka_format.jobs", "kafka_format.jobs.")),
    ("command line", ("kafka_format.cli", "kafka_format.cli.")),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _owner(name: str) -> str | None:
    """The module a dotted import name lands in (a name inside a module: that module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path) -> set[str]:
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_node(other)
                continue
            visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(filter(None, (_owner(a.name) for a in node.names if a.name.startswith("kafka_format"))))
        elif isinstance(node, ast.ImportFrom):
            base = imported_from(node, package)
            if base.startswith("kafka_format"):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    target = full if full in MODULES else _owner(base)
                    if target:
                        found.add(target)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    found.discard(module)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _layer(module: str) -> int:
    for rank, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix.endswith(".") and module.startswith(prefix)):
                return rank
    raise AssertionError(f"{module} is in no layer of tests/format/test_layers.py: add it where it belongs")


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_no_import_runs_from_a_lower_layer_to_a_higher_one() -> None:
    upward = [f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
              for m, targets in sorted(GRAPH.items()) for t in sorted(targets) if _layer(t) > _layer(m)]
    assert upward == []


def test_no_import_cycles() -> None:
    cycles = [sorted(c) for c in _cycles(GRAPH)]
    assert cycles == []


def test_the_walker_sees_cycles_lazy_imports_and_upward_imports() -> None:
    """The checks above can fail: a cycle through a function-level import is found, an import under
    TYPE_CHECKING is not an edge, and the format layer importing the CLI is upward."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert "kafka_format.records.fast" in GRAPH["kafka_format.records.implementation"]   # imported inside _choose()
    assert "kafka_format.records.batch_table" not in GRAPH["kafka_format.records.columns"]  # TYPE_CHECKING only
    assert _layer("kafka_format.cli.dump") > _layer("kafka_format.records.file_records")
    assert _layer("kafka_format.log.audit.scan") == _layer("kafka_format.log")


def test_every_layer_is_a_folder_whose_init_says_what_it_owns_and_may_import() -> None:
    for name, prefixes in LAYERS[1:]:
        folder = PACKAGE.joinpath(*prefixes[0].split(".")[1:])
        init = folder / "__init__.py"
        assert folder.is_dir() and init.is_file(), name
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "may import" in doc.lower(), f"{init}: its docstring does not say what the layer may import"


def test_the_top_level_holds_only_the_public_entry_module() -> None:
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py"]
