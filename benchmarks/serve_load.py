"""Load on ``remy serve``: concurrent clients of the official supermemory SDK searching
while one client adds documents, against the same work done in-process.

One command (writes ``benchmarks/results/serve-load.json`` and ``serve-load.md``)::

    .venv/bin/python -m benchmarks.serve_load                    # 8 searchers, 60 s
    .venv/bin/python -m benchmarks.serve_load --seconds 5 --docs 20 --out /tmp/x  # smoke

Setup: a fresh store with ``--docs`` short documents in 4 container tags (the real
MiniLM model, as ``remy serve`` runs it). Phase 1, over HTTP: ``remy serve`` in a
subprocess; ``--clients`` threads, each with its own ``Supermemory`` client
(``_strict_response_validation=True``), call ``search.documents`` (hybrid, limit 10,
one container tag, round-robin queries) in a loop for ``--seconds``, while one more
client adds a document at a time (``client.add``) as fast as it can. Phase 2, in-process:
the same store opened with :class:`~remy_retriever.Retriever` in this process; the same
number of threads call ``Retriever.search_documents`` with the same filter while one
thread calls ``Retriever.add``. Reported per phase: search and add counts, p50/p99
latency, errors (target 0), and the ratio HTTP / in-process. Exit status 1 on any error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import common

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

    def summary(self, seconds: float) -> dict[str, Any]:
        return {
            "calls": len(self.latencies),
            "per_second": round(len(self.latencies) / seconds, 1),
            "p50_ms": round(common.percentile(self.latencies, 50), 1),
            "p99_ms": round(common.percentile(self.latencies, 99), 1),
            "errors": len(self.errors),
            "first_errors": self.errors[:3],
        }


def run_load(
    search: Callable[[int, str, str], None],
    add: Callable[[int], None],
    *,
    clients: int,
    seconds: float,
    first_doc: int,
) -> dict[str, Any]:
    """``clients`` threads calling ``search(thread, query, tag)`` and one calling
    ``add(i)`` for ``seconds``."""
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
    took = time.monotonic() - began
    return {"seconds": round(took, 1), "search": searches.summary(took), "add": adds.summary(took)}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "remy_retriever.cli", "serve", "--db", str(db)]
    args += ["--port", str(port), "--api-key", KEY, "--log-level", "warning"]
    env = {**os.environ, **common.WORKER_ENV}
    handle = open(log, "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            msg = f"remy serve exited:\n{log.read_text()[-3000:]}"
            raise SystemExit(msg)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    msg = "remy serve did not start within 180 s"
    raise SystemExit(msg)


def http_phase(db: Path, args: argparse.Namespace) -> dict[str, Any]:
    from supermemory import Supermemory

    port = free_port()
    proc = start_server(db, port, db.parent / "serve.log")
    url = f"http://127.0.0.1:{port}"
    try:

        def make() -> Any:
            return Supermemory(
                base_url=url,
                api_key=KEY,
                _strict_response_validation=True,
                max_retries=0,
                timeout=120,
            )

        loader = make().with_options(timeout=600)
        for lo in range(0, args.docs, 50):
            loader.documents.batch_add(
                documents=[
                    {"content": fact(i), "container_tag": TAGS[i % len(TAGS)]}
                    for i in range(lo, min(args.docs, lo + 50))
                ]
            )
        clients = [make() for _ in range(args.clients)]
        writer = make()
        for c in clients:  # one warm-up call each (connection set-up)
            c.search.documents(q="warm up", container_tag=TAGS[0], limit=10)

        def search(n: int, q: str, tag: str) -> None:
            response = clients[n].search.documents(q=q, container_tag=tag, limit=10)
            assert all(r.metadata is not None for r in response.results)

        def add(i: int) -> None:
            writer.add(content=fact(i), container_tag=TAGS[i % len(TAGS)])

        return run_load(
            search, add, clients=args.clients, seconds=args.seconds, first_doc=args.docs
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def inprocess_phase(db: Path, args: argparse.Namespace, first_doc: int) -> dict[str, Any]:
    from remy_retriever import Document, Retriever

    retriever = Retriever(db, collection="docs")
    retriever.search_documents("warm up", limit=10, where={"container_tag": TAGS[0]})

    def search(n: int, q: str, tag: str) -> None:
        retriever.search_documents(q, limit=10, where={"container_tag": tag})

    def add(i: int) -> None:
        tag = TAGS[i % len(TAGS)]
        retriever.add([Document(id=f"inproc-{i}", text=fact(i), metadata={"container_tag": tag})])

    try:
        return run_load(
            search, add, clients=args.clients, seconds=args.seconds, first_doc=first_doc
        )
    finally:
        retriever.close()


def render(data: dict[str, Any]) -> str:
    http, local = data["http"], data["in_process"]
    lines = [
        "# remy serve under load",
        "",
        f"`remy serve` under load: {data['clients']} SDK clients searching while one adds "
        f"documents, {data['seconds']:.0f} s per phase, {data['docs']} documents to start "
        f"(real MiniLM; load average {data['machine']['load_average_start']} at start, "
        f"{data['machine']['load_average_end']} at end; shared machine).",
        "",
        "| phase | searches | searches/s | search p50 | search p99 | adds | add p50 | add p99 "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in (("HTTP (`remy serve` + SDK)", http), ("in-process library", local)):
        s, a = row["search"], row["add"]
        lines.append(
            f"| {name} | {s['calls']:,} | {s['per_second']} | {s['p50_ms']} ms | "
            f"{s['p99_ms']} ms | {a['calls']:,} | {a['p50_ms']} ms | {a['p99_ms']} ms | "
            f"{s['errors'] + a['errors']} |"
        )
    r = data["ratios"]
    lines += [
        "",
        f"HTTP / in-process: search p50 {r['search_p50']}x, search p99 {r['search_p99']}x, "
        f"search throughput {r['search_throughput']}x.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--name", default="serve-load")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    info = common.machine()
    work = Path(tempfile.mkdtemp(prefix="remy-serve-load-"))
    try:
        db = work / "db"
        http = http_phase(db, args)
        local = inprocess_phase(db, args, first_doc=args.docs + http["add"]["calls"] + 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a: float, b: float) -> float:
        return round(a / b, 2) if b else 0.0

    data = {
        "benchmark": "serve_load",
        "clients": args.clients,
        "seconds": args.seconds,
        "docs": args.docs,
        "http": http,
        "in_process": local,
        "ratios": {
            "search_p50": ratio(http["search"]["p50_ms"], local["search"]["p50_ms"]),
            "search_p99": ratio(http["search"]["p99_ms"], local["search"]["p99_ms"]),
            "search_throughput": ratio(http["search"]["per_second"], local["search"]["per_second"]),
        },
        "machine": common.finish_machine(info),
        "versions": common.versions(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(data, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(render(data))
    print(render(data))
    errors = sum(p[k]["errors"] for p in (http, local) for k in ("search", "add"))
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
