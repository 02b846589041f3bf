"""Load on ``remy serve``'s v5 routes: 8 clients of the official SDK ``supermemory``
5.x searching (``client.search``, hybrid) while one adds (``client.add``), against the
same engine calls in-process (``MemoryStore.search`` hybrid without duplicates, and
``LinkedDocuments.add``).

One command (writes ``benchmarks/results/serve-load-v5.json`` and ``.md``; needs
``.venv-sdk5`` from ``make venv``)::

    .venv/bin/python -m benchmarks.serve_load_v5                 # 8 searchers, 60 s
    .venv/bin/python -m benchmarks.serve_load_v5 --seconds 5 --docs 20 --out /tmp/x

Setup as :mod:`benchmarks.serve_load` (``--docs`` short documents in 4 namespaces, real
MiniLM). The HTTP phase runs :mod:`benchmarks.sdk5_load_client` with ``.venv-sdk5``'s
Python (the 5.x SDK shares its package name with the 3.62 SDK of the main venv).
Reported as serve_load: counts, p50/p99, errors (target 0), HTTP / in-process ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from benchmarks.serve_load import (
    KEY,
    TAGS,
    fact,
    free_port,
    measure,
    run_load,
    start_server,
    summary,
)

ROOT = Path(__file__).resolve().parents[1]
#: The SDK 5 venv's Python (``make venv`` builds it in the checkout; ``REMY_SDK5_PYTHON``
#: names another, e.g. a worktree sharing the main checkout's venvs).
SDK5_PYTHON = Path(os.environ.get("REMY_SDK5_PYTHON") or ROOT / ".venv-sdk5" / "bin" / "python")


def http_phase(db: Path, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    proc = start_server(db, port, db.parent / "serve.log")
    url = f"http://127.0.0.1:{port}"
    try:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
            for tag in TAGS:
                items = [{"content": fact(i)} for i in range(args.docs) if TAGS[i % 4] == tag]
                for lo in range(0, len(items), 50):
                    reply = client.post(
                        f"/ns/{tag}/document/batch", json={"documents": items[lo : lo + 50]}
                    )
                    reply.raise_for_status()
        script = Path(__file__).with_name("sdk5_load_client.py")
        command = [str(SDK5_PYTHON), str(script), url, KEY, str(args.clients)]
        command += [str(args.seconds), str(args.docs)]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=args.seconds + 600, check=True
        )
        raw = json.loads(done.stdout)
        took = float(raw["seconds"])
        return {
            "seconds": round(took, 1),
            "search": summary(raw["search"], raw["search_errors"], took),
            "add": summary(raw["add"], raw["add_errors"], took),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def inprocess_phase(db: Path, args: argparse.Namespace, first_doc: int) -> dict[str, Any]:
    from remy_retriever import MemoryStore, Retriever
    from remy_retriever.memory import LinkedDocuments

    retriever = Retriever(db, collection="docs")
    memories = MemoryStore(db, collection="memories", retriever=retriever)
    documents = LinkedDocuments(memories)
    memories.search("warm up", search_mode="hybrid", container_tag=TAGS[0], distinct=True)

    def search(n: int, q: str, tag: str) -> None:
        memories.search(q, search_mode="hybrid", limit=10, container_tag=tag, distinct=True)

    def add(i: int) -> None:
        tag = TAGS[i % len(TAGS)]
        doc = documents.prepare(
            content=f"Note {i}: a new fact.", tag=tag, custom_id=None, metadata=None
        )
        documents.add(doc, scope=[tag])

    try:
        return run_load(
            search, add, clients=args.clients, seconds=args.seconds, first_doc=first_doc
        )
    finally:
        memories.close()
        retriever.close()


def main(argv: list[str] | None = None) -> int:
    return measure(
        argv,
        name="serve-load-v5",
        http=http_phase,
        in_process=inprocess_phase,
        title="remy serve under load: the v5 API (SDK 5)",
        sdk="SDK 5",
    )


if __name__ == "__main__":
    raise SystemExit(main())
