"""Differential test: our MVU engine against MagVarUpdate's own code (the mvu-oracle).

The oracle's npm packages are installed before the tests, never by them (no test touches the
network): ``.ci/oracles`` copies it to ``.cache/mvu-oracle`` and runs ``npm ci`` there (``.ci/run``
calls it). The test skips cleanly without node, without ``../shared``, or when that install is
missing (``NARRATIVE_MVU_ORACLE`` points elsewhere). Cases: the oracle's
own ``handwritten.jsonl`` and ``fixtures.jsonl`` (the two real cards) plus seeded generated ones.
After every message the ``stat_data`` must be the same, except where MVU stored NaN/Infinity,
which we reject on purpose (the command is refused with its reason instead); where stat_data
agrees, MVU's ``display_data`` and ``delta_data`` (the ``old->new (reason)`` texts) must too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SHARED
from tests.mvu_oracle_support import (
    compare,
    compare_display,
    compare_masked,
    generated_cases,
    generated_patch_and_init_cases,
    nonfinite_in,
    run_case_full,
)

ORACLE = SHARED / "tools" / "mvu-oracle"
GENERATED = 300


@pytest.fixture(scope="session")
def oracle() -> Path:
    """The installed oracle folder (its ``run_mvu.mjs`` and ``node_modules``)."""
    if not (ORACLE / "run_mvu.mjs").exists():
        pytest.skip("../shared/tools/mvu-oracle is not available")
    if shutil.which("node") is None:
        pytest.skip("node is needed to run the MVU oracle")
    folder = Path(os.environ.get("NARRATIVE_MVU_ORACLE") or ROOT / ".cache" / "mvu-oracle")
    if not (folder / "node_modules").is_dir() or not (folder / "run_mvu.mjs").exists():
        pytest.skip(f"the MVU oracle is not installed in {folder}: run `bash .ci/oracles`")
    return folder


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for name in ("handwritten", "fixtures"):
        for line in (ORACLE / "cases" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if case.get("card_file"):
                case["card_file"] = str((ORACLE / "cases" / case["card_file"]).resolve())
            cases.append(case)
    return cases + generated_cases(GENERATED) + generated_patch_and_init_cases(GENERATED // 2)


def _run_oracle(oracle: Path, cases: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    source, target = work / "cases.jsonl", work / "out.jsonl"
    source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), "utf-8")
    done = subprocess.run(
        ["node", str(oracle / "run_mvu.mjs"), str(source), str(target)],
        cwd=oracle, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(line) for line in target.read_text("utf-8").splitlines()]
    return {result["id"]: result for result in results}


def test_stat_data_after_every_message_agrees_with_magvarupdate(
    oracle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _cases()
    theirs = _run_oracle(oracle, cases, tmp_path)
    agreed, nonfinite, differ = 0, 0, []
    for case in cases:
        full, mvu = run_case_full(case, Path("/")), theirs[case["id"]]
        ours = [None if step is None else step["stat_data"] for step in full]
        problems = compare(ours, mvu)
        if not problems:
            agreed += 1
            differ += [f"{case['id']}: {p}" for p in compare_display(full, mvu)[:1]]
        elif nonfinite_in(mvu) and not compare_masked(ours, mvu):
            nonfinite += 1
        else:
            differ.append(f"{case['id']}: {problems[0]}")
    with capsys.disabled():
        print(
            f"\nmvu-oracle agreement: {agreed}/{len(cases)} cases identical "
            f"({100 * agreed / len(cases):.1f}%); {nonfinite} identical but for the values where "
            f"MVU stored NaN/Infinity (rejected here on purpose); {len(differ)} other differences"
        )
    assert not differ, "\n".join(differ[:10])
    assert agreed >= 0.85 * len(cases)
