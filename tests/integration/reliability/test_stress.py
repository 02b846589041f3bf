"""Acceptance: one process writes (add, update, delete) while two others search in every
mode, with and without filters, against the same embedded store, and open it afresh every
2 s. Every process counts its errors of every kind; the target is none.

``REMY_STRESS_SECONDS`` sets the duration (default 60). ``REMY_STRESS_EMBEDDER=minilm``
runs it with the real model instead of the fake TokenHashEmbedder. Run with ``-s`` to
see the counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from remy_reliability_support import (
    MODES,
    check_indexes_agree,
    check_vectors_complete,
    check_whole_documents,
)
from stress_worker import make_document, open_store

pytestmark = pytest.mark.sleepy

WORKER = Path(__file__).resolve().parent / "stress_worker.py"
SECONDS = float(os.environ.get("REMY_STRESS_SECONDS", "60"))
EMBEDDER = os.environ.get("REMY_STRESS_EMBEDDER", "fake")


def start(store: Path, go: Path, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        # -X faulthandler: a native crash (e.g. inside Chroma) prints the Python stack.
        [sys.executable, "-X", "faulthandler", str(WORKER), str(store), EMBEDDER, str(go), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != "READY":
        _, err = proc.communicate(timeout=60)
        pytest.fail(f"worker {args} did not start: {line!r} {err[-3000:]}")
    return proc


def report_of(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args[4:]} exited {proc.returncode}: {err[-6000:]}"
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


@pytest.mark.timeout(int(SECONDS) + 900)
def test_one_writer_and_two_searcher_processes_see_no_errors(tmp_path: Path) -> None:
    store, go = tmp_path / "db", tmp_path / "go"
    rng = np.random.default_rng(1)
    with open_store(str(store), EMBEDDER) as r:
        r.add([make_document(n, 0, rng) for n in range(1, 41)])
    procs = {
        "writer": start(store, go, "write", str(SECONDS)),
        "searcher 1": start(store, go, "search", str(SECONDS), "1"),
        "searcher 2": start(store, go, "search", str(SECONDS), "2"),
    }
    go.touch()
    began = time.monotonic()
    reports = {name: report_of(p, SECONDS + 600) for name, p in procs.items()}
    print(f"\nstress, {SECONDS:g} s ({EMBEDDER}, {time.monotonic() - began:.0f} s wall):")
    for name, report in reports.items():
        print(f"  {name}: {json.dumps(report)}")
    errors = {name: report["errors"] for name, report in reports.items() if report["errors"]}
    assert not errors, errors
    writes = sum(reports["writer"]["ops"].values())
    assert writes >= max(5, SECONDS / 10), reports["writer"]
    assert {"add", "update", "delete"} <= set(reports["writer"]["ops"]), reports["writer"]
    for name in ("searcher 1", "searcher 2"):
        done = reports[name]["searches"]
        assert set(done) == set(MODES), (name, done)
        assert min(done.values()) >= 5 and sum(done.values()) >= SECONDS / 2, (name, done)
        assert reports[name]["hits"] > 0, (name, reports[name])
        assert reports[name]["opens"] >= SECONDS // 10, (name, reports[name])
    # And the store is whole afterwards.
    with open_store(str(store), EMBEDDER) as r:
        check_indexes_agree(r)
        check_whole_documents(r)
        check_vectors_complete(r)
        # Integrity only: dense reachability (an HNSW recall property that churn can
        # break for a chunk) has its own tests in test_reachability.py.
        assert r.doctor(sample=0).ok
