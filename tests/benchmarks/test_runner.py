"""The benchmark runner reaches every benchmark: each script in benchmarks/ is a step of a
suite or a named helper, so that ``python -m benchmarks run --quick`` (run in CI) leaves
no script to rot. Reads the suite table only; runs nothing slow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import suites

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in ("__init__", "__main__")
)


def _stepped() -> set[str]:
    return {
        step.module.removeprefix("benchmarks.")
        for suite in suites.SUITES
        for step in suite.steps
        if step.module.startswith("benchmarks.")
    }


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_is_a_suite_step_or_a_named_helper(script: str) -> None:
    assert script in _stepped() or script in suites.HELPERS, (
        f"benchmarks/{script}.py is run by no suite and is no named helper: add it to a "
        "suite in benchmarks/suites.py, name it in HELPERS, or delete it"
    )


def test_no_suite_step_or_helper_names_a_missing_script() -> None:
    assert (_stepped() | set(suites.HELPERS)) - set(SCRIPTS) == set()


def test_every_step_that_runs_quick_names_the_results_it_writes() -> None:
    for suite in suites.SUITES:
        for step in suite.steps:
            assert step.record, f"{step.module} has no run of record"
            if step.quick is not None:
                assert step.outputs, f"{step.module}'s quick run names no results file"


def test_the_runner_lists_every_suite() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = [line.split(":", 1)[0] for line in listed.splitlines() if not line.startswith(" ")]
    assert names == [s.name for s in suites.SUITES]
    for wanted in ("quality", "scale", "ingest", "files", "serve", "mcp", "embedders"):
        assert wanted in names
    assert {"rerank", "soak"} <= set(names)


def test_an_unknown_suite_is_refused_with_the_names_to_choose_from() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "qualty", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown suite 'qualty'" in done.stderr and "quality" in done.stderr


def test_the_quick_data_has_judged_queries_for_every_document(tmp_path: Path) -> None:
    folder = suites.write_quick_beir(tmp_path)
    corpus = (folder / "corpus.jsonl").read_text().splitlines()
    qrels = (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]
    judged = {line.split("\t")[1] for line in qrels}
    assert len(corpus) == len(judged) == 48
