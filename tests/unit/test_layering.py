"""The package layering, read from the source: the core ``suite`` imports no plugin or modality package,
the modality libraries import no task plugin, and the core's import graph has no cycles.

Every ``import`` and ``from ... import`` statement counts, at module level and inside functions, except
those under ``if TYPE_CHECKING:`` (never executed). ``from P import name`` imports ``P.name`` when that
is a module of the repository and ``P`` otherwise; importing ``a.b.c`` also runs the ``__init__`` of
``a`` and ``a.b``, so it counts as importing those packages too. A cycle is reported as the chain of
imports that closes it (``a -> b -> a``), one chain per back edge of a depth-first search, so the
reported chains cover every cycle of the graph. That every registered name is found in a fresh interpreter
is ``tests/integration/test_layering.py``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("suite", "tasks", "baselines", "infonoise_modalities")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def repository_modules() -> dict[str, Path]:
    """Module name → source file, for every module of the repository's packages."""
    return {
        module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    }


def _under_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(source: str, module: str, is_package: bool = False, type_only: bool = False) -> set[str]:
    """Dotted names that ``source`` (the text of ``module``) imports, with ``from P import name`` giving
    both ``P`` and ``P.name``; statements under ``if TYPE_CHECKING:`` are left out unless ``type_only``."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not type_only and isinstance(node, ast.If) and _under_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return names


def import_graph(modules: dict[str, Path], type_only: bool = False) -> dict[str, set[str]]:
    """Module → the repository modules it imports (and the packages whose ``__init__`` that runs); with
    ``type_only``, the imports under ``if TYPE_CHECKING:`` too."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for imported in imported_names(path.read_text(), name, path.name == "__init__.py", type_only):
            parts = imported.split(".")
            edges.update(p for p in (".".join(parts[:k]) for k in range(1, len(parts) + 1)) if p in modules)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """One ``a -> b -> a`` chain per back edge of a depth-first search over ``graph`` in sorted order."""
    state: dict[str, str] = {}
    stack: list[str] = []
    found: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def offending_imports(importers: str, forbidden: tuple[str, ...]) -> list[str]:
    """``module imports name`` for each import of a ``forbidden`` top-level package by a module of
    the ``importers`` package (``from P import name`` reported once, as ``P.name``)."""
    found = []
    for name, path in repository_modules().items():
        if name.split(".")[0] != importers:
            continue
        imported = imported_names(path.read_text(), name, path.name == "__init__.py")
        found += [
            f"{name} imports {target}"
            for target in sorted(imported)
            if target.split(".")[0] in forbidden and not any(o.startswith(f"{target}.") for o in imported)
        ]
    return found


def test_scanner_counts_function_level_imports_and_skips_type_checking_blocks():
    source = (
        "import typing\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tasks.owt\n"
        "if typing.TYPE_CHECKING:\n    import baselines\nelse:\n    import numpy\n"
        "def f():\n    from suite import records\n    from . import sibling\n    from ..up import thing\n"
    )
    assert imported_names(source, "suite.metrics.fid") == {
        "typing",
        "typing.TYPE_CHECKING",
        "numpy",
        "suite",
        "suite.records",
        "suite.metrics",
        "suite.metrics.sibling",
        "suite.up",
        "suite.up.thing",
    }


def test_cycle_search_reports_each_cycle_as_a_chain():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c", "e"}, "e": set()}
    assert cycles(graph) == ["a -> b -> a", "c -> d -> c"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_core_imports_no_task_plugin_baseline_or_modality_library():
    found = offending_imports("suite", ("tasks", "baselines", "infonoise_modalities"))
    assert not found, "; ".join(found)


PLUGIN_PACKAGES = ("tasks", "baselines", "infonoise_modalities")


def module_names_in_text(text: str, forbidden: tuple[str, ...], first_line: int = 1) -> list[str]:
    """The names of a module (dotted, ``a.b``, or as a path, ``a/b.py``) of a ``forbidden`` package that
    ``text`` spells out, each as ``line N: 'name'`` (``text`` starting at line ``first_line``)."""
    pattern = re.compile(rf"(?<![\w./])(?:{'|'.join(forbidden)})(?:[./][A-Za-z_]\w*)+")
    return [
        f"line {first_line + text.count(chr(10), 0, match.start())}: {match.group(0)!r}"
        for match in pattern.finditer(text)
    ]


def module_names_in_strings(source: str, forbidden: tuple[str, ...]) -> list[str]:
    """The module names (``module_names_in_text``) that the strings of ``source`` spell out, docstrings
    included: the core finds plugins by entry point, so no string of it may name one to import."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += module_names_in_text(node.value, forbidden, node.lineno)
    return found


def test_the_string_scan_finds_module_names_dotted_and_as_paths():
    source = (
        'NAMES = ("tasks.cifar10", "see infonoise_modalities/image/fid.py")\n'
        'x = f"tasks.{name}: see docs/tasks.md; baselines"\n'
    )
    assert module_names_in_strings(source, PLUGIN_PACKAGES) == [
        "line 1: 'tasks.cifar10'",
        "line 1: 'infonoise_modalities/image/fid.py'",
    ]


def test_no_string_of_the_core_names_a_plugin_or_modality_module():
    """Every string of a core module, and the whole text of the core's config files (comments too)."""
    found = [
        f"{name}: {hit}"
        for name, path in repository_modules().items()
        if name.split(".")[0] == "suite"
        for hit in module_names_in_strings(path.read_text(), PLUGIN_PACKAGES)
    ]
    for path in sorted((ROOT / "suite").rglob("*.yaml")):
        found += [
            f"{path.relative_to(ROOT)}: {hit}"
            for hit in module_names_in_text(path.read_text(), PLUGIN_PACKAGES)
        ]
    assert not found, "; ".join(found)


def test_no_task_plugin_imports_another():
    """Code that several tasks share lives in a modality library; a task module imports none of its
    siblings (a task that derives from another derives from their common base there)."""
    found = [
        line
        for line in offending_imports("tasks", ("tasks",))
        if line.split(" imports ")[1] not in ("tasks", line.split(" imports ")[0])
    ]
    assert not found, "; ".join(found)


def test_the_modality_libraries_import_no_task_plugin():
    found = offending_imports("infonoise_modalities", ("tasks",))
    assert not found, "; ".join(found)


def test_the_core_import_graph_has_no_cycles_type_only_imports_included():
    core = {n: p for n, p in repository_modules().items() if n.split(".")[0] == "suite"}
    graph = import_graph(core, type_only=True)
    found = cycles(graph)
    assert not found, "import cycles in suite/: " + "; ".join(found)


WINGS = ("noise", "run", "launch", "report", "measure", "commands")


def level(module: str) -> int:
    """A suite module's storey: 0 for the shared floor at suite's root (and suite/metrics), then one per wing
    in the order of ``WINGS``, and the command line (``suite.cli``) on top."""
    parts = module.split(".")
    if module == "suite.cli":
        return len(WINGS) + 1
    return WINGS.index(parts[1]) + 1 if len(parts) > 1 and parts[1] in WINGS else 0


def downward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``a imports b`` for every edge of ``graph`` from a lower storey to a higher one."""
    return [f"{a} imports {b}" for a in sorted(graph) for b in sorted(graph[a]) if level(b) > level(a)]


def test_the_storey_of_a_module_is_its_wing():
    assert [level(m) for m in ("suite.records", "suite.metrics.frechet", "suite.noise.sampler")] == [0, 0, 1]
    assert [level(m) for m in ("suite.run.step", "suite.launch.study", "suite.report.table")] == [2, 3, 4]
    assert [level(m) for m in ("suite.measure.bench", "suite.commands.run", "suite.cli")] == [5, 6, 7]
    assert downward_imports({"suite.run.step": {"suite.noise.sampler", "suite.report.table"}}) == [
        "suite.run.step imports suite.report.table"
    ]


def test_each_wing_imports_only_the_floor_and_the_wings_below_it():
    """noise < run < launch < report < measure < commands < cli, the shared floor (task, registry, records,
    config, …) under all of them: a module never imports one of a higher storey, at module level or in a
    function."""
    graph = import_graph({n: p for n, p in repository_modules().items() if n.split(".")[0] == "suite"})
    assert {m.split(".")[1] for m in graph if len(m.split(".")) > 2} >= set(WINGS)
    found = downward_imports(graph)
    assert not found, "; ".join(found)


def registered_names(registry: str) -> list[str]:
    """Every name that a module of the repository registers with ``registry`` (``METRICS`` or
    ``FEATURIZERS``), as ``@REGISTRY.register("name")`` or ``REGISTRY.register("name")(cls)``."""
    names = []
    for path in repository_modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == registry
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.append(str(node.args[0].value))
    return sorted(names)


REGISTERED = [("METRICS", n) for n in registered_names("METRICS")] + [
    ("FEATURIZERS", n) for n in registered_names("FEATURIZERS")
]


def test_the_scan_finds_the_text_metrics_and_featurisers_of_the_modality_library():
    assert {("METRICS", "mauve-minilm"), ("METRICS", "gen-ppl"), ("FEATURIZERS", "minilm")} <= set(REGISTERED)
