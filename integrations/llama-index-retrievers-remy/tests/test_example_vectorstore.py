"""Smoke test: examples/llamaindex_vectorstore.py runs offline and prints cited results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import REPO_ROOT


def test_llamaindex_vectorstore_example(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "llamaindex_vectorstore.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    first, again = map(
        int, re.search(r"indexed (\d+) chunks; after indexing again: (\d+)", out).groups()
    )  # type: ignore[union-attr]
    assert first == again > 0
    assert re.search(r"^  \d\.\d{4} install\.md ", out, re.M)
    assert "the top hit with its neighbours: 3 nodes" in out
    before, after = map(int, re.search(r"deleted install\.md: (\d+) -> (\d+) chunks", out).groups())  # type: ignore[union-attr]
    assert after < before == first
