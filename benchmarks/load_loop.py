"""The load both ``remy serve`` benchmarks put on a server: the documents, the queries and
the client loop (``clients`` threads searching while one adds). Standard library only, so
that :mod:`benchmarks.sdk5_load_client` runs it under ``.venv-sdk5``'s Python too."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

TAGS = ["t0", "t1", "t2", "t3"]
KEY = "bench-key-0123456789abcdef"
TOPICS = [
    "solar panels convert sunlight into electricity",
    "protein folding determines enzyme structure",
    "river floods damage farmland and houses",
    "stock markets react to interest rates",
    "neural networks learn by gradient descent",
    "the roman empire built roads and aqueducts",
    "bees pollinate orchards in spring",
    "glaciers carve valleys over millennia",
]
QUERIES = [
    "how do solar panels work",
    "enzyme structure",
    "flood damage to farms",
    "interest rates and markets",
    "gradient descent training",
    "roman roads",
    "pollination by bees",
    "how glaciers shape valleys",
]


def fact(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"Note {i}: {topic}. Observation {i * 7 % 101} was recorded on day {i % 365}."


class Recorder:
    """Latencies (ms) and errors of one kind of call, from many threads."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], Any]) -> None:
        began = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            return
        with self._lock:
            self.latencies.append((time.perf_counter() - began) * 1000)


def load(
    search: Callable[[int, str, str], Any],
    add: Callable[[int], Any],
    *,
    clients: int,
    seconds: float,
    first_doc: int,
) -> tuple[Recorder, Recorder, float]:
    """``clients`` threads calling ``search(thread, query, tag)`` round-robin over
    :data:`QUERIES` and :data:`TAGS`, and one calling ``add(i)`` from ``first_doc`` on,
    for ``seconds``. Returns the searches, the adds and the wall time taken."""
    searches, adds = Recorder(), Recorder()
    stop = time.monotonic() + seconds

    def searcher(n: int) -> None:
        i = n
        while time.monotonic() < stop:
            q, tag = QUERIES[i % len(QUERIES)], TAGS[i % len(TAGS)]
            searches.call(lambda q=q, tag=tag: search(n, q, tag))
            i += 1

    def writer() -> None:
        i = first_doc
        while time.monotonic() < stop:
            adds.call(lambda i=i: add(i))
            i += 1

    threads = [threading.Thread(target=searcher, args=(n,)) for n in range(clients)]
    threads.append(threading.Thread(target=writer))
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return searches, adds, time.monotonic() - began
