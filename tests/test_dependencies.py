"""Honest dependencies: only public modules of other packages, and floors that are tested.

A private module (``typer._click``) can vanish in any release; the floors in pyproject.toml are
the versions the suite runs on, so a user who installs the lowest allowed versions gets a
tested program (issue 12).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .conftest import ROOT

SRC = ROOT / "src" / "narrative_cli"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (absolute imports only), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def is_private(module: str) -> bool:
    """A dotted name with a ``_private`` part (``__future__``-style dunders are public)."""
    return any(p.startswith("_") and not p.startswith("__") for p in module.split("."))


def private_imports(path: Path) -> list[str]:
    """``file:line module`` for each import of another package's ``_private`` module or name."""
    return [
        f"{path.relative_to(ROOT)}:{line} {module}"
        for line, module in imported_modules(path)
        if module.split(".")[0] != "narrative_cli" and is_private(module)
    ]


def test_no_src_module_imports_a_private_module_of_another_package() -> None:
    problems = [p for path in sorted(SRC.rglob("*.py")) for p in private_imports(path)]
    assert problems == []


def test_the_private_import_check_finds_the_one_issue_12_found(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typer._click.exceptions import ClickException\n"
        "import yaml._yaml\nimport os.path\nfrom narrative_cli.x import _y\n",
        encoding="utf-8",
    )
    flagged = [m for _, m in imported_modules(probe) if is_private(m)]
    assert "typer._click.exceptions" in flagged and "yaml._yaml" in flagged
    assert "os.path" not in flagged


def _requirements() -> list[str]:
    """The quoted requirements of ``dependencies`` and the extras (no tomllib on 3.10)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = text.split("[project]", 1)[1].split("\n[tool.", 1)[0]
    lists = re.findall(r"^(?:dependencies|\w+) = \[(.*?)\]", project, flags=re.M | re.S)
    return [r for block in lists for r in re.findall(r'"([^"]+)"', block)]


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:4])


def test_every_dependency_has_a_floor_that_the_tested_environment_meets() -> None:
    requirements = _requirements()
    assert any(r.startswith("click") for r in requirements), requirements
    assert not any(r.startswith("typer") for r in requirements), requirements
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?>=([0-9][0-9.]*)", requirement)
        assert match, f"{requirement!r}: give a floor (>=) that the test suite runs on"
        name, floor = match.groups()
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # an extra that is not installed here (e.g. the local model runtime)
        assert _version_tuple(installed) >= _version_tuple(floor), (name, installed, floor)


def test_no_arguments_prints_the_help_once_and_exits_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "narrative_cli"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stdout.count("Usage:") == 1
    assert "Usage:" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_usage_error_names_the_option_on_stderr() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", "--bogus-flag"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "No such option: --bogus-flag" in result.stderr


# ---- every import is declared ----------------------------------------------------------------
# A test once imported ``click`` directly while only Typer (which vendors its own Click) was
# declared; the benchmarks' ``llm`` brought a ``click`` into the development environment, so the
# suite passed here and failed to collect on CI, which installs what pyproject.toml declares and
# nothing else. The CLI is built on Click now; Typer is the package that is installed here (by
# ``llm``'s plugins or an old venv) and declared nowhere.


def _dist(requirement: str) -> str:
    name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*extras: str) -> set[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_dist(r) for r in project["dependencies"]}
    for extra in extras:
        names |= {_dist(r) for r in project["optional-dependencies"][extra]}
    return names


def _guarded_lines(path: Path) -> set[int]:
    """Lines inside a ``try`` that catches ImportError (an optional package, reported when
    missing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            handler.type is None
            or any(n in ast.unparse(handler.type) for n in ("ImportError", "Exception"))
            for handler in node.handlers
        ):
            for stmt in node.body:
                lines |= set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def undeclared_imports(folder: Path, allowed: set[str]) -> list[str]:
    """``file:line module`` for each unguarded import of a package no allowed distribution
    provides."""
    owners = metadata.packages_distributions()
    local = {p.stem for p in folder.glob("*.py")} | {"narrative_cli", "tests"}
    wrong = []
    for path in sorted(folder.rglob("*.py")):
        guarded = _guarded_lines(path)
        for line, module in imported_modules(path):
            top = module.split(".")[0]
            if top in local or top in sys.stdlib_module_names or line in guarded:
                continue
            if not {_dist(d) for d in owners.get(top, [])} & allowed:
                where = path.relative_to(ROOT if path.is_relative_to(ROOT) else folder)
                wrong.append(f"{where}:{line} {top}")
    return sorted(set(wrong))


def test_the_source_imports_only_what_pyproject_declares() -> None:
    assert undeclared_imports(SRC, _declared("local")) == []


def test_the_tests_import_only_what_pyproject_declares() -> None:
    assert undeclared_imports(ROOT / "tests", _declared("local", "dev")) == []


def test_the_declared_imports_check_finds_typer(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from click.testing import Result\nimport typer\nimport json\n"
        "try:\n    import d20\nexcept ImportError:\n    d20 = None\n",
        encoding="utf-8",
    )
    found = undeclared_imports(tmp_path, _declared("local", "dev"))
    assert found == ["probe.py:2 typer"]  # click is declared; typer is not, installed or not


def test_nothing_imports_typer() -> None:
    """The CLI is built on Click (issue 12): no source, test or benchmark imports Typer."""
    folders = (SRC, ROOT / "tests", ROOT / "benchmarks")
    found = [f"{path.relative_to(ROOT)}:{line} {module}"
             for folder in folders for path in sorted(folder.rglob("*.py"))
             for line, module in imported_modules(path) if module.split(".")[0] == "typer"]
    assert found == []
