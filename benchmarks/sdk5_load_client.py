"""The HTTP side of ``benchmarks.serve_load_v5``, run with the Python of ``.venv-sdk5``
(the official SDK ``supermemory`` 5.x; no remy, no numpy there):
``python sdk5_load_client.py URL KEY CLIENTS SECONDS FIRST_DOC``. ``CLIENTS`` threads,
each with its own ``Supermemory`` client, call ``client.search`` (hybrid, limit 10, one
namespace, round-robin queries) while one more client adds a document at a time
(``client.add``). Prints one JSON object: every latency (ms) and error per kind."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from supermemory import Supermemory

TAGS = ["t0", "t1", "t2", "t3"]
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


def main() -> None:
    url, key, clients, seconds, first = sys.argv[1:6]
    n_clients, stop_after, first_doc = int(clients), float(seconds), int(first)
    out: dict[str, Any] = {"search": [], "search_errors": [], "add": [], "add_errors": []}
    lock = threading.Lock()

    def make() -> Supermemory:
        return Supermemory(base_url=url, api_key=key, max_retries=0, timeout=120)

    def record(kind: str, fn: Any) -> None:
        began = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            with lock:
                out[f"{kind}_errors"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
            return
        with lock:
            out[kind].append((time.perf_counter() - began) * 1000)

    searchers = [make() for _ in range(n_clients)]
    for c in searchers:
        c.search(TAGS[0], query="warm up", limit=10)
    stop = time.monotonic() + stop_after

    def searcher(n: int) -> None:
        i = n
        while time.monotonic() < stop:
            q, tag = QUERIES[i % len(QUERIES)], TAGS[i % len(TAGS)]
            record("search", lambda q=q, tag=tag: searchers[n].search(tag, query=q, limit=10))
            i += 1

    def writer() -> None:
        client, i = make(), first_doc
        while time.monotonic() < stop:
            tag = TAGS[i % len(TAGS)]
            record("add", lambda i=i, tag=tag: client.add(tag, content=f"Note {i}: a new fact."))
            i += 1

    threads = [threading.Thread(target=searcher, args=(n,)) for n in range(n_clients)]
    threads.append(threading.Thread(target=writer))
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["seconds"] = time.monotonic() - began
    print(json.dumps(out))


if __name__ == "__main__":
    main()
