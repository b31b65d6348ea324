"""No import cycles between the modules of src, counting every import (issue 12).

Type-only imports (under ``TYPE_CHECKING``) and imports inside functions count too: a loop that
only type checking or a late import hides is still two modules that cannot be understood, moved
or tested apart. Shared types go down into their own small module instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import ROOT

PACKAGE = "narrative_cli"


def module_names(src: Path) -> dict[str, Path]:
    """Dotted name → file for every module under ``src/narrative_cli``."""
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in modules else base)
    return {module for module in found if module in modules and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
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
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def import_graph(src: Path) -> dict[str, set[str]]:
    modules = module_names(src)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_src_has_no_import_cycles() -> None:
    assert cycles(import_graph(ROOT / "src")) == []


def test_a_type_only_loop_is_found(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE / "lore"
    package.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text("from narrative_cli.lore.assemble import routed\n")
    (package / "assemble.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from narrative_cli.lore.engine import Activation\n"
    )
    (package / "scan.py").write_text(
        "def run():\n    from . import engine\n    return engine\n"  # a late relative import
    )
    (package / "rules.py").write_text("from narrative_cli.lore import scan\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.lore.scan"] == {f"{PACKAGE}.lore.engine"}
    assert cycles(graph) == [[f"{PACKAGE}.lore.assemble", f"{PACKAGE}.lore.engine"]]


def test_one_class_is_called_turn_state() -> None:
    # The running turn (pipeline.turn) and the stored one (store.models.StoredTurn) used to
    # share the name; a reader of either file could not tell which was meant.
    defined = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "src").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "TurnState"
    ]
    assert defined == ["src/narrative_cli/pipeline/turn.py"]
