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
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx

from benchmarks import common
from benchmarks.serve_load import KEY, TAGS, Recorder, fact, free_port, run_load, start_server

ROOT = Path(__file__).resolve().parents[1]
SDK5_PYTHON = ROOT / ".venv-sdk5" / "bin" / "python"


def summary(latencies: list[float], errors: list[str], seconds: float) -> dict[str, Any]:
    recorder = Recorder()
    recorder.latencies, recorder.errors = latencies, errors
    return recorder.summary(seconds)


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


def render(data: dict[str, Any]) -> str:
    http, local = data["http"], data["in_process"]
    lines = [
        "# remy serve under load: the v5 API (SDK 5)",
        "",
        f"`remy serve`'s v5 routes under load: {data['clients']} SDK 5 clients searching "
        f"(hybrid) while one adds documents, {data['seconds']:.0f} s per phase, "
        f"{data['docs']} documents to start (real MiniLM; load average "
        f"{data['machine']['load_average_start']} at start, "
        f"{data['machine']['load_average_end']} at end; shared machine).",
        "",
        "| phase | searches | searches/s | search p50 | search p99 | adds | add p50 | add p99 "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in (("HTTP (`remy serve` + SDK 5)", http), ("in-process library", local)):
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
    parser.add_argument("--name", default="serve-load-v5")
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = parser.parse_args(argv)
    info = common.machine()
    work = Path(tempfile.mkdtemp(prefix="remy-serve-load-v5-"))
    try:
        db = work / "db"
        http = http_phase(db, args)
        local = inprocess_phase(db, args, first_doc=args.docs + http["add"]["calls"] + 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a: float, b: float) -> float:
        return round(a / b, 2) if b else 0.0

    data = {
        "benchmark": "serve_load_v5",
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
