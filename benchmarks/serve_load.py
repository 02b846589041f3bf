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
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.load_loop import KEY, TAGS, Recorder, fact, load


def _summary(recorder: Recorder, seconds: float) -> dict[str, Any]:
    return {
        "calls": len(recorder.latencies),
        "per_second": round(len(recorder.latencies) / seconds, 1),
        "p50_ms": round(common.percentile(recorder.latencies, 50), 1),
        "p99_ms": round(common.percentile(recorder.latencies, 99), 1),
        "errors": len(recorder.errors),
        "first_errors": recorder.errors[:3],
    }


def summary(latencies: list[float], errors: list[str], seconds: float) -> dict[str, Any]:
    """The summary of one kind of call from its latencies (ms) and errors."""
    recorder = Recorder()
    recorder.latencies, recorder.errors = latencies, errors
    return _summary(recorder, seconds)


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
    searches, adds, took = load(search, add, clients=clients, seconds=seconds, first_doc=first_doc)
    return {
        "seconds": round(took, 1),
        "search": _summary(searches, took),
        "add": _summary(adds, took),
    }


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


Phase = Callable[..., dict[str, Any]]


def render(data: dict[str, Any], title: str = "remy serve under load", sdk: str = "SDK") -> str:
    http, local = data["http"], data["in_process"]
    lines = [
        f"# {title}",
        "",
        f"`remy serve` under load: {data['clients']} {sdk} clients searching while one adds "
        f"documents, {data['seconds']:.0f} s per phase, {data['docs']} documents to start "
        f"(real MiniLM; load average {data['machine']['load_average_start']} at start, "
        f"{data['machine']['load_average_end']} at end; shared machine).",
        "",
        "| phase | searches | searches/s | search p50 | search p99 | adds | add p50 | add p99 "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in ((f"HTTP (`remy serve` + {sdk})", http), ("in-process library", local)):
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


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else 0.0


def measure(
    argv: list[str] | None,
    *,
    name: str,
    http: Phase,
    in_process: Phase,
    title: str = "remy serve under load",
    sdk: str = "SDK",
) -> int:
    """The command line, both phases on one fresh store, and the results files: what
    this benchmark and :mod:`benchmarks.serve_load_v5` share."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--name", default=name)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    info = common.machine()
    work = Path(tempfile.mkdtemp(prefix=f"remy-{name}-"))
    try:
        db = work / "db"
        remote = http(db, args)
        local = in_process(db, args, first_doc=args.docs + remote["add"]["calls"] + 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    data = {
        "benchmark": name.replace("-", "_"),
        "clients": args.clients,
        "seconds": args.seconds,
        "docs": args.docs,
        "http": remote,
        "in_process": local,
        "ratios": {
            "search_p50": _ratio(remote["search"]["p50_ms"], local["search"]["p50_ms"]),
            "search_p99": _ratio(remote["search"]["p99_ms"], local["search"]["p99_ms"]),
            "search_throughput": _ratio(
                remote["search"]["per_second"], local["search"]["per_second"]
            ),
        },
        "machine": common.finish_machine(info),
        "versions": common.versions(),
    }
    markdown = render(data, title, sdk)
    common.write_results(args.out, args.name, data, markdown)
    print(markdown)
    errors = sum(p[k]["errors"] for p in (remote, local) for k in ("search", "add"))
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    return measure(argv, name="serve-load", http=http_phase, in_process=inprocess_phase)


if __name__ == "__main__":
    raise SystemExit(main())
