"""Fixtures for the security regression tests (issue #26): a real ``remy serve`` and a
real ``remy mcp`` pinned to ``alice``, each on its own copy of one seeded store, driven by
the real outside clients (httpx, the ``mcp`` SDK's ``ClientSession`` over stdio)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "integration" / "serve"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

from anyio.from_thread import start_blocking_portal  # noqa: E402
from remy_serve_support import RemyServer  # noqa: E402
from security_support import McpClient, mcp_session, seed  # noqa: E402


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("security-seed") / "db"
    return db, seed(db)


def _copy(
    seeded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory, name: str
) -> Path:
    """A copy of the seeded store of its own, so no door's writes reach another's."""
    copy = tmp_path_factory.mktemp(name) / "db"
    shutil.copytree(seeded[0], copy)
    return copy


@pytest.fixture(scope="session")
def server(
    seeded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RemyServer]:
    """``remy serve`` with the test keys (one bound to ``alice``, one to ``bob``)."""
    running = RemyServer(_copy(seeded, tmp_path_factory, "security-serve")).start()
    try:
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


@pytest.fixture(scope="session")
def mcp_alice(
    seeded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpClient]:
    """``remy mcp --container-tag alice`` over stdio, on its own copy of the store."""
    copy = _copy(seeded, tmp_path_factory, "security-mcp")
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            mcp_session(["--db", str(copy), "--container-tag", "alice"])
        ) as session,
    ):
        yield McpClient(portal, session)
