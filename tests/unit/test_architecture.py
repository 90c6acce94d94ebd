"""The import graph of groundwatch's packages: no cycles, and every import goes down the layers.

Every `import` and `from ... import` of `schemas`, `transforms`, `dashboards` and `pipelines` is read with
`ast`: at module level, inside functions and under `if TYPE_CHECKING:` alike (an import moved into a
function still makes a dependency; it only hides a cycle from the interpreter). Each is resolved to one of
our modules: `from pkg import name` is an import of `pkg.name` when that is a module, else of `pkg`.
Importing a submodule also runs its parent packages' `__init__`, but those edges are not counted: a package
that re-exports its submodules would otherwise form a cycle with each of them.

The layers, lowest first (an import may go down or stay level, never up):

- `schemas` imports nothing of ours but `schemas`;
- `transforms` imports `schemas` and `transforms`; within it, `transforms.text` imports only itself and
  `schemas`, and `transforms.io` (JSONL, Kafka, the lake) only itself and `schemas`;
- `dashboards` imports `schemas`, itself, and of `transforms` only the lake's reader
  (`transforms.io.lake.reader`, the rollups it reads beside compacted files, the review queue's among them,
  and its filesystem layer for a lake in object storage) and `transforms.monitoring`; never `pipelines`;
- `pipelines` may import all of them.

Commands are leaves: nothing imports the dispatcher `pipelines.cli`, and nothing but it imports a command
module (`COMMANDS`): what commands share lives in library modules (`pipelines.runner`, `pipelines.options`,
`dashboards.lake_sql`). An import of ours inside a function says `# kept lazy: start-up (...)`: it is there only
to keep a command's start-up fast.

Besides: no cycle between two modules, nor between two subpackages of `transforms` (`transforms.io` and
`transforms.monitoring` may not lean on each other, even through different modules); and an import from
another package (another top-level package, or another subpackage of `transforms`) names only what the
module declares in `__all__`, never an underscore name: its internals stay its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipelines.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "transforms", "dashboards", "pipelines")

MAY_IMPORT = {
    "schemas": ("schemas",),
    "transforms": ("schemas", "transforms"),
    "transforms.text": ("schemas", "transforms.text"),
    "transforms.io": ("schemas", "transforms.io"),
    "dashboards": (
        "schemas",
        "transforms.io.lake.reader",
        "transforms.io.lake.rollups",
        "transforms.io.lake.review_rollup",
        "transforms.io.lake.filesystem",
        "transforms.monitoring",
        "dashboards",
    ),
    "pipelines": ("schemas", "transforms", "dashboards", "pipelines"),
}
"""Importer -> the packages of ours it may import; the longest prefix naming the importer's package applies."""


@dataclass(frozen=True)
class Import:
    """One import statement's dependency: who imports what, where, and which name (for `from m import name`)."""

    importer: str
    target: str
    line: int
    name: str | None = None

    def where(self) -> str:
        return f"{MODULES[self.importer][0].relative_to(ROOT)}:{self.line}"


def _find_modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = _find_modules()


def _ours(name: str) -> str | None:
    """The module of ours that `name` (a dotted import target) is or lies in, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports_of(module: str) -> list[Import]:
    path, is_package = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(module, t, node.lineno) for a in node.names if (t := _ours(a.name))]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: None if is_package else -1]
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    found.append(Import(module, f"{base}.{alias.name}", node.lineno))
                elif target := _ours(base):
                    found.append(Import(module, target, node.lineno, alias.name if target == base else None))
    return [i for i in found if i.target != module]


@cache
def _graph() -> dict[str, list[Import]]:
    return {module: _imports_of(module) for module in MODULES}


def _unit(module: str) -> str:
    """The package a module belongs to for the rules across packages: a subpackage of `transforms`, else the
    top-level package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "transforms" and len(parts) > 1 else parts[0]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a closed path) per strongly connected group of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_path_within(group, edges) for group in groups]


def _path_within(group: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest closed path through the group's smallest member (breadth first, inside the group)."""
    start = min(group)
    came_from = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                path = [node]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt in group and nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start}")


def _describe(path: list[str], lines: dict[tuple[str, str], Import]) -> str:
    steps = [f"{a} -> {b} ({lines[a, b].where()})" for a, b in zip(path, path[1:], strict=False)]
    return " ; ".join(steps)


def _declared_all(module: str) -> set[str] | None:
    path, _ = MODULES[module]
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
            return set(ast.literal_eval(node.value))
    return None


def test_the_graph_sees_imports_at_module_level_inside_functions_and_of_submodules_by_name():
    def targets(module: str) -> set[tuple[str, str | None]]:
        return {(i.target, i.name) for i in _graph()[module]}

    assert ("schemas.monitoring", "ALL_TRAFFIC") in targets("dashboards.report")  # at module level
    assert ("transforms.verify.registry", "make_verifier") in targets("pipelines.calibrate")  # inside a function
    assert ("pipelines.traffic.synthetic", None) in targets("pipelines.traffic.scenarios")  # `from pkg import module`
    assert ("schemas", "TABLES") in targets("transforms.io.lake.writer")  # `from pkg import name`: the package
    assert _ours("schemas.lake.TABLES") == "schemas.lake" and _ours("apache_beam.io") is None
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules():
    edges = {m: {i.target for i in imports} for m, imports in _graph().items()}
    lines = {(i.importer, i.target): i for imports in _graph().values() for i in imports}
    cycles = [_describe(path, lines) for path in _cycles(edges)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_cycle_between_the_subpackages_of_transforms():
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], Import] = {}
    for imports in _graph().values():
        for i in imports:
            a, b = _unit(i.importer), _unit(i.target)
            if a != b and a.startswith("transforms.") and b.startswith("transforms."):
                edges.setdefault(a, set()).add(b)
                lines.setdefault((a, b), i)
    cycles = [f"{' -> '.join(path)}: {_describe(path, lines)}" for path in _cycles(edges)]
    assert not cycles, "cycles between subpackages of transforms:\n" + "\n".join(cycles)


def test_imports_go_down_the_layers():
    broken: dict[str, None] = {}  # one line per statement, though it imports several names
    for imports in _graph().values():
        for i in imports:
            rule = max((p for p in MAY_IMPORT if i.importer == p or i.importer.startswith(p + ".")), key=len)
            if not any(i.target == p or i.target.startswith(p + ".") for p in MAY_IMPORT[rule]):
                broken[f"{i.importer} -> {i.target} ({i.where()}): {rule} may import only {MAY_IMPORT[rule]}"] = None
    assert not broken, "imports against the layers:\n" + "\n".join(broken)


def test_imports_from_another_package_name_only_what_it_declares_public():
    broken = []
    for imports in _graph().values():
        for i in imports:
            if i.name is None or i.name == "*" or _unit(i.importer) == _unit(i.target):
                continue
            public = _declared_all(i.target)
            if i.name.startswith("_") or (public is not None and i.name not in public):
                broken.append(f"{i.importer} imports {i.target}.{i.name} ({i.where()}), not in its __all__")
    assert not broken, "imports of another package's internals:\n" + "\n".join(broken)


COMMAND_MODULES = frozenset(module for module, _ in COMMANDS.values())
"""The modules the dispatcher (`pipelines.cli`) runs as commands: leaves, which nothing else imports."""


def test_nothing_but_the_dispatcher_imports_a_command_module():
    found = {
        f"{i.target} imported by {i.importer} ({i.where()})"
        for imports in _graph().values()
        for i in imports
        if i.target in COMMAND_MODULES and i.importer != "pipelines.cli" and _unit(i.importer) != i.target
    }
    assert not found, "command modules are leaves; move what they share into a library module:\n" + "\n".join(
        sorted(found)
    )


LAZY_REASON = "kept lazy: start-up"
"""The comment a function-level import of ours carries: on its line, or on comment lines just above it or just
above its group of imports."""


def _is_ours(statement: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(statement, ast.ImportFrom):
        return bool(statement.level) or (statement.module or "").split(".")[0] in PACKAGES
    return any(alias.name.split(".")[0] in PACKAGES for alias in statement.names)


def _unexplained_lazy_imports(text: str) -> list[tuple[int, str]]:
    """`(line, code)` of each import of ours inside a function that does not say, in a comment on it or just
    above its group of imports, that it is kept lazy for start-up."""
    lines = text.splitlines()
    found: dict[int, str] = {}
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            for block in (getattr(node, name, None) for name in ("body", "orelse", "finalbody")):
                if not isinstance(block, list):
                    continue
                group_start = None
                for statement in block:
                    if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                        group_start = None
                        continue
                    group_start = group_start or statement.lineno
                    said = lines[statement.lineno - 1 : statement.end_lineno]
                    for above in {statement.lineno - 2, group_start - 2}:  # comments just above it or its group
                        while above >= 0 and lines[above].strip().startswith("#"):
                            said.append(lines[above])
                            above -= 1
                    if _is_ours(statement) and not any(LAZY_REASON in line for line in said):
                        found[statement.lineno] = lines[statement.lineno - 1].strip()
    return sorted(found.items())


def test_the_lazy_import_check_wants_the_reason_on_the_import_or_above_its_group():
    source = """from schemas import A


def f():
    import json
    from schemas import B
    from transforms import C  # kept lazy: start-up (Beam)


def g():
    # kept lazy: start-up (pandas)
    from schemas import D
    from dashboards import E
    x = 1
    from pipelines import F
"""
    assert _unexplained_lazy_imports(source) == [(6, "from schemas import B"), (15, "from pipelines import F")]


def test_imports_inside_functions_say_they_keep_start_up_fast():
    """An import of ours belongs at the top of the module, where a reader looks for it; only one that keeps a
    command's start-up fast (it would load Beam, pandas, boto3 or a web framework for nothing) stays in its
    function, and says so."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {code}"
        for path, _ in MODULES.values()
        for line, code in _unexplained_lazy_imports(path.read_text())
    ]
    assert not found, f"imports inside functions without '# {LAZY_REASON} (...)':\n" + "\n".join(found)


def test_nothing_imports_the_dispatcher():
    """The commands' shared helpers (`iso_time`, the lake flag, `UsageError`) live in `pipelines.options.common`,
    not in `pipelines.cli`, which imports every command."""
    found = [
        f"{i.importer} ({i.where()})" for imports in _graph().values() for i in imports if i.target == "pipelines.cli"
    ]
    assert not found, "imports of the dispatcher pipelines.cli:\n" + "\n".join(found)
