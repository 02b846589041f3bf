"""The CI variant of ``benchmarks/soak.py``: 5k chunks, 4 threads of mixed queries for
20 s. Zero errors and no runaway memory (the full run: 100k chunks for 5 minutes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.sleepy

SOAK = Path(__file__).resolve().parents[3] / "benchmarks" / "soak.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("remy_soak", SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(240)
def test_soak_20s(tmp_path: Path) -> None:
    soak = _load()
    report = soak.run(
        chunks=5000, seconds=20, threads=4, window=5, warmup=2, db=tmp_path, progress=False
    )
    assert report["config"]["chunks_stored"] == 5000
    assert report["errors"] == 0, report["error_samples"]
    assert report["hung_threads"] == 0
    # Every window of the run served queries: none of the threads stalled for a window.
    assert report["windows"] and all(w["queries"] > 0 for w in report["windows"]), report
    assert report["rss_growth"] < soak.MAX_RSS_GROWTH, report
    assert "| window (s) |" in soak.markdown(report)
