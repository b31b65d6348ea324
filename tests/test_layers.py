"""The direction of imports between packages (#12): ``ui/`` renders, it does not run things.

Rules, checked on every module's import statements (module level and inside functions):

- only ``cli/`` (which builds the renderer and hands it in) and ``ui/`` itself import
  ``narrative_cli.ui``: ``play/``, ``pipeline/``, ``replay/``, ``state/`` and the rest reach
  the screen only through the interfaces they define (``play.commands.Screen``,
  ``play.launch.Front``, ``replay.batch.ReplayView``);
- ``ui/`` imports nothing from ``store/`` or ``backends/`` at run time (an import under
  ``if TYPE_CHECKING:``, for an annotation, is allowed);
- ``ui/`` does not import the orchestrators that call it (``play.launch``, ``replay.batch``,
  ``pipeline.orchestrator``).

``rich``, ``httpx``, ``sqlite3`` and ``prompt_toolkit`` are confined by ruff's banned-api rule
(pyproject.toml).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "narrative_cli"
UI_MAY_NOT_RUN = ("narrative_cli.store", "narrative_cli.backends")
ORCHESTRATORS = ("narrative_cli.play.launch", "narrative_cli.replay.batch",
                 "narrative_cli.pipeline.orchestrator")  # fmt: skip


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. narrative_cli.ui.screen
    target: str  # what it imports, e.g. narrative_cli.play.controller
    type_only: bool  # inside ``if TYPE_CHECKING:``
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.AST, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".")[: -node.level]
            base = ".".join([*package, base] if base else package)
        return [base] + [f"{base}.{alias.name}" for alias in node.names]
    return []


def _walk(node: ast.AST, module: str, type_only: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for inner in child.body:
                yield from _walk_one(inner, module, True)
            for inner in child.orelse:
                yield from _walk_one(inner, module, type_only)
        else:
            yield from _walk_one(child, module, type_only)


def _walk_one(node: ast.AST, module: str, type_only: bool) -> Iterator[Import]:
    for target in _targets(node, module):
        yield Import(module, target, type_only, getattr(node, "lineno", 0))
    yield from _walk(node, module, type_only)


def imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found.extend(_walk(tree, _module_name(path), False))
    return found


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_import_walker_sees_module_function_and_type_only_imports() -> None:
    found = imports()
    assert any(
        i.module == "narrative_cli.ui.screen" and i.target == "narrative_cli.play.controller"
        for i in found
    )
    assert any(  # a function-level import
        i.module == "narrative_cli.cli.run" and i.target == "narrative_cli.ui.front" for i in found
    )
    assert any(  # a type-only import
        i.module == "narrative_cli.ui.sessions_view"
        and _under(i.target, "narrative_cli.store")
        and i.type_only
        for i in found
    )


def test_only_cli_and_ui_import_ui() -> None:
    wrong = [
        str(i)
        for i in imports()
        if _under(i.target, "narrative_cli.ui")
        and not _under(i.module, "narrative_cli.ui")
        and not _under(i.module, "narrative_cli.cli")
    ]
    assert wrong == []


def test_ui_runs_no_store_or_backend_code() -> None:
    wrong = [
        str(i)
        for i in imports()
        if _under(i.module, "narrative_cli.ui")
        and not i.type_only
        and any(_under(i.target, banned) for banned in UI_MAY_NOT_RUN)
    ]
    assert wrong == []


def test_ui_does_not_import_the_orchestrators_that_call_it() -> None:
    wrong = [
        str(i)
        for i in imports()
        if _under(i.module, "narrative_cli.ui")
        and any(_under(i.target, orchestrator) for orchestrator in ORCHESTRATORS)
    ]
    assert wrong == []
