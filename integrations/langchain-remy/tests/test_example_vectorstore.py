"""Smoke test: examples/langchain_vectorstore.py runs offline and prints cited results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_langchain_vectorstore_example(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "langchain_vectorstore.py"), str(tmp_path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    first = re.search(r"first index\(\): added (\d+), skipped 0, deleted 0; remy holds (\d+)", out)
    second = re.search(
        r"second index\(\): added 0, skipped (\d+), deleted 0; remy holds (\d+)", out
    )
    assert first and second, out
    assert first.group(1) == second.group(1) and first.group(2) == second.group(2)
    cited = re.findall(r"\[\d\] source: (\S+) \(start_index \d+\)", out)
    assert len(cited) == 3 and cited[0].endswith("examples/corpus/install.md")
