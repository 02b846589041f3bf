"""A writer process for the crash tests: it ingests, updates and deletes documents and
is SIGKILLed at a random point by the test.

Every call is logged to an ack file with unbuffered ``os.write`` (it survives SIGKILL):
``BEGIN <op> <ids> <version>`` before the call, ``ACK <op> <ids> <version>`` after it
returned. ``READY`` follows opening the store (which repairs an earlier crash).

Modes:
    python crash_worker.py run SEED STORE ACKFILE   -- one writer run
    python crash_worker.py zygote                   -- import once, then fork one writer
        per JSON line on stdin ({"seed", "store", "acks"}), answering each with the
        child's pid on stdout; children are reaped automatically. Forking a preloaded
        process keeps 20+ runs cheap (imports cost seconds on a busy machine).
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from remy_reliability_support import TokenHashEmbedder

from remy_retriever import Document, Retriever

COLLECTION = "crash-kb"
MAX_TOKENS = 40
N_OPS = 10


def marker(doc_id: str) -> str:
    """A word only this document contains (in its title, so in every chunk)."""
    return f"mark{doc_id.replace('-', '')}q"


def make_document(doc_id: str, version: int, rng: random.Random) -> Document:
    words = ["alpha", "river", "stone", "cloud", "ember", "maple", "orbit", "delta", "prism"]
    sections = []
    for s in range(rng.randint(1, 4)):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(8, 40)))
        sections.append(f"## Part {s}\n\nVersion {version} of {doc_id}. {body}.")
    text = f"# {marker(doc_id)}\n\n" + "\n\n".join(sections)
    return Document(id=doc_id, text=text, title=marker(doc_id), metadata={"version": version})


def run(seed: int, store: str, acks: str) -> None:
    fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    rng = random.Random(seed)
    r = Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder(), max_tokens=MAX_TOKENS)
    log("READY")
    alive: list[str] = [doc for doc, n in _existing(r).items() if n >= 0]
    next_id = 0
    for _ in range(N_OPS):
        roll = rng.random()
        if roll < 0.65 or len(alive) < 2:
            batch = []
            for _ in range(rng.randint(1, 3)):
                batch.append(f"s{seed}-d{next_id}")
                next_id += 1
            docs = [make_document(d, 0, rng) for d in batch]
            _call(log, "ADD", batch, 0, lambda docs=docs: r.add(docs))
            alive += batch
        elif roll < 0.85:
            doc = rng.choice(alive)
            version = rng.randint(1, 10_000)
            new = make_document(doc, version, rng)
            _call(log, "UPD", [doc], version, lambda new=new: r.add([new]))
        else:
            doc = rng.choice(alive)
            _call(log, "DEL", [doc], 0, lambda doc=doc: r.delete([doc]))
            alive.remove(doc)
    log("DONE")
    r.close()


def _call(
    log: Callable[[str], None], op: str, ids: list[str], version: int, fn: Callable[[], Any]
) -> None:
    log(f"BEGIN {op} {','.join(ids)} {version}")
    fn()
    log(f"ACK {op} {','.join(ids)} {version}")


def _existing(r: Retriever) -> dict[str, int]:
    docs: dict[str, int] = {}
    for page in r._sync.dense.iter_all(documents=False):
        for _, _, meta in page:
            docs[str(meta["remy_doc_id"])] = int(meta["remy_n_chunks"])
    return docs


def zygote() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # auto-reap children
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # SIGUSR1 dumps the stacks (the test asks for them if a writer stalls).
                stacks = open(str(job["acks"]) + ".stacks", "w")  # noqa: SIM115
                faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
                run(int(job["seed"]), str(job["store"]), str(job["acks"]))
            except BaseException as exc:  # report, then exit without cleanup
                with open(str(job["acks"]) + ".err", "w") as handle:
                    handle.write(repr(exc))
                code = 1
            finally:
                os._exit(code)
        print(pid, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote()
    else:
        run(int(sys.argv[2]), sys.argv[3], sys.argv[4])
