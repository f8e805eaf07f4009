"""The package layout stays readable: a root of packages only, and no import cycles among the
modules a reader follows first (command line, simulator core, tracking).

Imports are read statically (module level, function level and ``TYPE_CHECKING`` blocks alike):
a cycle a reader trips over is a cycle even when Python tolerates it at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import distrl_tasks

ROOT = Path(next(iter(distrl_tasks.__path__)))  # a namespace package: no __init__.py


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """``module -> modules of distrl_tasks it imports`` for every module of the package."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            # importing a module also runs its package's __init__, but that is not a cycle
            graph[name].update(
                t for t in targets if t in modules and t != name and not name.startswith(t + ".")
            )
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_cycle_finder_sees_a_cycle_and_a_clean_graph() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_package_root_holds_only_packages() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py"))
    assert loose == [], f"modules at the package root (move them into a package): {loose}"


def test_no_import_cycles_through_the_modules_readers_start_from() -> None:
    watched = {
        "distrl_tasks.cli.main",
        "distrl_tasks.cli.bench",
        "distrl_tasks.cli.pipeline",
        "distrl_tasks.sim.device_farm",
        "distrl_tasks.sim.adb_server",
        "distrl_tasks.sim.shell",
        "distrl_tasks.sim.shell_android",
        "distrl_tasks.sim.shell_builtins",
        "distrl_tasks.tracking.runs",
        "distrl_tasks.tracking.run_handle",
    }
    graph = import_graph()
    assert watched <= graph.keys(), f"renamed without updating this test: {watched - graph.keys()}"
    tangled = [sorted(c) for c in cycles(graph) if c & watched]
    assert tangled == [], f"import cycles: {tangled}"


def test_simulator_does_not_import_tasks() -> None:
    graph = import_graph()
    phone_deps = graph["distrl_tasks.sim.phone"]
    assert not {d for d in phone_deps if d.startswith("distrl_tasks.tasks")}
