"""Server faults with a real ``chroma run``: killed mid-search and mid-ingest, hung, or
restarted within the retry window. Every test leaves the session server running."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remy_reliability_support import (
    MODES,
    TokenHashEmbedder,
    check_indexes_agree,
    check_whole_documents,
    doc_ids,
)

from remy_retriever import Document, Retriever, ServerUnavailableError
from remy_retriever.util.retry import RetryPolicy

pytestmark = [pytest.mark.server, pytest.mark.sleepy]
_names = itertools.count()


@pytest.fixture
def server(chroma_server: Any) -> Iterator[Any]:
    chroma_server.start()
    try:
        yield chroma_server
    finally:
        _resume(chroma_server)
        chroma_server.start()  # later tests need it


def _resume(server: Any) -> None:
    proc = getattr(server, "_proc", None)
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)


def _kill(server: Any) -> None:
    """SIGKILL the server (no graceful shutdown), then reap it."""
    proc = server._proc
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    server.stop()


def _open(server: Any, tmp_path: Path, policy: RetryPolicy) -> Retriever:
    return Retriever(
        client=server.client(),
        collection=f"faults-{next(_names)}-{os.getpid()}",
        embedder=TokenHashEmbedder(dim=64),
        lexical_path=tmp_path / "lex",
        retry=policy,
    )


def _doc(i: int) -> Document:
    return Document(id=f"f{i}", text=f"# Fact {i}\n\nThe keyword kw{i}x marks fact {i}.")


def _assert_intact(r: Retriever, acked: list[int]) -> None:
    for mode in MODES:
        for i in acked[:: max(1, len(acked) // 5)]:
            hits = r.search(f"kw{i}x", mode=mode, k=3)  # type: ignore[arg-type]
            assert f"f{i}" in doc_ids(hits), (mode, i)
    check_indexes_agree(r)
    check_whole_documents(r)
    assert r.doctor(sample=0).ok  # integrity; reachability: test_reachability.py


@pytest.mark.timeout(240)
def test_server_killed_mid_search(server: Any, tmp_path: Path) -> None:
    policy = RetryPolicy(attempts=3, backoff=0.1, max_backoff=0.4, timeout=5)
    r = _open(server, tmp_path, policy)
    r.add([_doc(i) for i in range(20)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_loop() -> None:
        n = 0
        while not stop.is_set():
            try:
                r.search(f"kw{n % 20}x", mode=MODES[n % 3], k=3)  # type: ignore[arg-type]
            except ServerUnavailableError as exc:
                errors.append(exc)
                return
            except BaseException as exc:
                errors.append(exc)
                return
            n += 1

    thread = threading.Thread(target=search_loop)
    thread.start()
    time.sleep(1.0)
    _kill(server)
    thread.join(timeout=60)
    stop.set()
    assert not thread.is_alive(), "search hung after the server died"
    assert errors and isinstance(errors[0], ServerUnavailableError), errors
    message = str(errors[0])
    assert server.url in message and "chroma run" in message, message
    server.start()
    _assert_intact(r, list(range(20)))  # the same object recovers on its next call


@pytest.mark.timeout(240)
def test_server_killed_mid_ingest(server: Any, tmp_path: Path) -> None:
    policy = RetryPolicy(attempts=2, backoff=0.1, max_backoff=0.2, timeout=5)
    r = _open(server, tmp_path, policy)
    acked: list[int] = []
    errors: list[BaseException] = []

    def ingest() -> None:
        for start in range(0, 100_000, 3):
            try:
                r.add([_doc(i) for i in range(start, start + 3)])
            except BaseException as exc:
                errors.append(exc)
                return
            acked.extend(range(start, start + 3))

    thread = threading.Thread(target=ingest)
    thread.start()
    deadline = time.monotonic() + 60
    while len(acked) < 30 and time.monotonic() < deadline:
        time.sleep(0.05)
    _kill(server)
    thread.join(timeout=60)
    assert not thread.is_alive(), "ingest hung after the server died"
    assert errors and isinstance(errors[0], ServerUnavailableError), errors
    assert server.url in str(errors[0])
    server.start()
    # Same object: the interrupted write left the dirty flag; the next call repairs.
    _assert_intact(r, acked)
    r.add([_doc(10**6)])
    _assert_intact(r, [*acked, 10**6])


@pytest.mark.timeout(240)
def test_retry_rides_out_a_restart_within_the_window(server: Any, tmp_path: Path) -> None:
    policy = RetryPolicy(attempts=120, backoff=0.25, max_backoff=0.5, timeout=5)
    r = _open(server, tmp_path, policy)
    r.add([_doc(1)])
    server.stop()
    restarted = threading.Event()

    def restart() -> None:
        restarted.set()
        server.start()

    restarter = threading.Timer(1.0, restart)
    restarter.start()
    try:
        hits = r.search("kw1x", mode="hybrid", k=3)
        assert restarted.is_set()  # it returned only after the restart began ...
    finally:
        restarter.join()
    assert doc_ids(hits)[:1] == ["f1"]  # ... and then succeeded
    r.add([_doc(2)])  # writes retry too (upsert/delete are idempotent)
    _assert_intact(r, [1, 2])


@pytest.mark.timeout(240)
def test_retry_gives_up_after_a_bounded_time(server: Any, tmp_path: Path) -> None:
    policy = RetryPolicy(attempts=3, backoff=0.2, max_backoff=0.4, timeout=2)
    r = _open(server, tmp_path, policy)
    r.add([_doc(1)])
    server.stop()
    for call in (
        lambda: r.search("kw1x", mode="semantic", k=3),
        lambda: r.search("kw1x", mode="lexical", k=3),
        lambda: r.add([_doc(2)]),
        lambda: r.delete(["f1"]),
    ):
        # It gives up after the policy's three attempts (the 240 s timeout bounds a hang).
        with pytest.raises(ServerUnavailableError, match=r"127\.0\.0\.1.*3 attempts"):
            call()
    server.start()
    _assert_intact(r, [1])


@pytest.mark.timeout(240)
def test_a_hung_server_times_out(server: Any, tmp_path: Path) -> None:
    """SIGSTOP: the server accepts connections but never answers. Chroma's HTTP client
    has no timeout of its own; RetryPolicy.timeout bounds every request."""
    policy = RetryPolicy(attempts=2, backoff=0.1, max_backoff=0.1, timeout=1.5)
    r = _open(server, tmp_path, policy)
    r.add([_doc(1)])
    os.kill(server._proc.pid, signal.SIGSTOP)
    try:
        for mode in ("semantic", "hybrid"):
            with pytest.raises(ServerUnavailableError, match="Timeout") as info:
                r.search("kw1x", mode=mode, k=3)  # type: ignore[arg-type]
            assert "2 attempts" in str(info.value)  # each attempt timed out; none hung
    finally:
        os.kill(server._proc.pid, signal.SIGCONT)
    _assert_intact(r, [1])


def test_retry_policy_validation() -> None:
    from remy_retriever import InvalidInputError

    for bad in (
        {"attempts": 0},
        {"attempts": 1.5},
        {"backoff": -1},
        {"max_backoff": float("inf")},
        {"timeout": 0},
        {"timeout": "5"},
    ):
        with pytest.raises(InvalidInputError, match="RetryPolicy"):
            RetryPolicy(**bad)
    policy = RetryPolicy(attempts=4, backoff=0.5, max_backoff=1.0, timeout=2)
    assert [policy.delay(i) for i in (1, 2, 3)] == [0.5, 1.0, 1.0]
    assert policy.max_duration() == 4 * 2 + 2.5
    assert RetryPolicy(timeout=None).max_duration() is None
    with pytest.raises(InvalidInputError, match="retry must be a RetryPolicy"):
        Retriever(path=None, client=_Dummy(), retry=3)  # type: ignore[arg-type]


class _Dummy:
    def get_settings(self) -> None:
        return None
