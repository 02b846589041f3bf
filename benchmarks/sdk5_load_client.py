"""The HTTP side of ``benchmarks.serve_load_v5``, run with the Python of ``.venv-sdk5``
(the official SDK ``supermemory`` 5.x; no remy, no numpy there):
``python sdk5_load_client.py URL KEY CLIENTS SECONDS FIRST_DOC``. The load of
:mod:`benchmarks.load_loop`, each searcher with its own ``Supermemory`` client calling
``client.search`` (hybrid, limit 10, one namespace) and one more client adding a
document at a time (``client.add``). Prints one JSON object: every latency (ms) and
error per kind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from supermemory import Supermemory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_loop import TAGS, load


def main() -> None:
    url, key, clients, seconds, first = sys.argv[1:6]

    def make() -> Supermemory:
        return Supermemory(base_url=url, api_key=key, max_retries=0, timeout=120)

    searchers = [make() for _ in range(int(clients))]
    for c in searchers:
        c.search(TAGS[0], query="warm up", limit=10)
    writer = make()
    searches, adds, took = load(
        lambda n, q, tag: searchers[n].search(tag, query=q, limit=10),
        lambda i: writer.add(TAGS[i % len(TAGS)], content=f"Note {i}: a new fact."),
        clients=int(clients),
        seconds=float(seconds),
        first_doc=int(first),
    )
    out = {
        "search": searches.latencies,
        "search_errors": searches.errors,
        "add": adds.latencies,
        "add_errors": adds.errors,
        "seconds": took,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
