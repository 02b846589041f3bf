"""Reranking never reaches for the network. On a machine whose network is allowed but has
no model (the offline flags unset, an empty Hugging Face cache, ``HF_ENDPOINT`` at a local
listener that counts connections), ``rerank=True`` with no reranker configured fails at
once in every door with a message naming that door's fix, and not one connection is
made; ``remy mcp --reranker BAD`` refuses to start. (``remy serve``: in
``serve/test_serve_reranker.py``.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DEFAULT = "cross-encoder/ms-marco-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def store(tea_store: Path) -> Path:
    return tea_store


def _python(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_stand_in_endpoint_sees_what_a_download_would_try(unreachable_hub: Any) -> None:
    """The listener does count: a hub download in the same environment connects to it."""
    code = (
        "from huggingface_hub import hf_hub_download\n"
        "try:\n"
        f"    hf_hub_download({DEFAULT!r}, 'config.json')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    done = _python(code, unreachable_hub.env)
    assert done.returncode == 0, done.stderr
    assert unreachable_hub.listener.accepted > 0


SEARCHES = """
import sys
import remy_retriever
from remy_retriever import ModelLoadError, Retriever
from remy_retriever.memory import MemoryStore

print(remy_retriever.__file__)
with Retriever(sys.argv[1], create=False) as docs, MemoryStore(retriever=docs) as memories:
    for name, search in [
        ("search", lambda: docs.search("green tea", rerank=True)),
        ("search_documents", lambda: docs.search_documents("green tea", rerank=True)),
        ("memories", lambda: memories.search("green tea", rerank=True)),
        ("no hits", lambda: docs.search("green tea", where={"topic": "none"}, rerank=True)),
    ]:
        try:
            search()
        except ModelLoadError as exc:
            print(name, "::", exc)
        else:
            print(name, ":: no error")
"""


def test_the_python_api_fails_at_once_naming_the_keyword(
    store: Path, tmp_path: Path, unreachable_hub: Any
) -> None:
    db = tmp_path / "db"
    shutil.copytree(store, db)
    before = unreachable_hub.listener.accepted
    done = _python(SEARCHES, unreachable_hub.env, str(db))
    assert done.returncode == 0, done.stderr
    where, *lines = done.stdout.strip().splitlines()
    assert where.startswith(str(Path(__file__).parents[2])), where  # this tree's code
    assert [line.split(" :: ")[0] for line in lines] == [
        "search",
        "search_documents",
        "memories",
        "no hits",
    ]
    for line in lines:
        message = line.split(" :: ")[1]
        assert DEFAULT in message and "Hugging Face cache" in message, line
        assert "Retriever(reranker=PATH)" in message and "rerank=PATH" in message, line
        assert "--rerank" not in message and "HF_HUB_OFFLINE" not in message, line
    assert unreachable_hub.listener.accepted == before


@pytest.mark.parametrize("command", [["search", "green tea"], ["memory", "search", "tea"]])
def test_the_cli_fails_at_once_naming_the_flag(
    store: Path, tmp_path: Path, unreachable_hub: Any, command: list[str]
) -> None:
    before = unreachable_hub.listener.accepted
    done = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", *command, "--db", str(store), "--rerank"],
        env=unreachable_hub.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert DEFAULT in line and "--rerank-model PATH" in line and "REMY_RERANK_MODEL" in line
    assert "Retriever(" not in line, line
    assert unreachable_hub.listener.accepted == before


def test_the_mcp_search_tool_is_an_error_naming_the_flag(
    store: Path, tmp_path: Path, unreachable_hub: Any, run_mcp: Any
) -> None:
    db = tmp_path / "db"
    shutil.copytree(store, db)
    before = unreachable_hub.listener.accepted
    calls = [
        ("search", {"query": "green tea", "rerank": True}),
        ("search", {"query": "green tea"}),
    ]
    log = tmp_path / "mcp.log"
    reranked, plain = run_mcp(["--db", str(db), "--read-only"], unreachable_hub.env, log, calls)
    assert reranked.is_error
    message = reranked.content[0].text
    assert DEFAULT in message and "--reranker PATH" in message, message
    assert "REMY_RERANK_MODEL" in message and "--rerank-model" not in message, message
    assert not plain.is_error and plain.structured_content["hits"]
    assert "Traceback" not in log.read_text(), log.read_text()
    assert unreachable_hub.listener.accepted == before


@pytest.mark.parametrize("bad", ["missing", "not-a-model"])
def test_a_reranker_that_cannot_be_loaded_stops_remy_mcp(
    tmp_path: Path, unreachable_hub: Any, bad: str
) -> None:
    path = tmp_path / bad
    if bad == "not-a-model":
        path.mkdir()
        (path / "config.json").write_text("{}")
    db = tmp_path / "db"
    before = unreachable_hub.listener.accepted
    argv = ["mcp", "--db", str(db), "--reranker", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", *argv],
        env=unreachable_hub.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("remy: error: ") and str(path) in line, line
    assert "--reranker PATH" in line and "REMY_RERANK_MODEL" in line, line
    assert done.stdout == ""  # no protocol message: it never served
    assert not db.exists()
    assert unreachable_hub.listener.accepted == before
