"""Fixtures for the ``remy serve`` tests: one real server subprocess per test module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from remy_serve_support import RemyServer  # noqa: E402

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("supermemory", reason="the supermemory SDK is not installed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemyServer]:
    """A ``remy serve`` on a fresh store, shared by the tests of one module."""
    running = RemyServer(tmp_path_factory.mktemp("serve") / "db").start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()
