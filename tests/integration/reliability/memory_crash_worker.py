"""A writer process for the memory crash tests: documents with a container tag written
through :class:`LinkedDocuments` (so each short one is also a memory), SIGKILLed by the
test while it writes.

Each call is logged to an ack file with unbuffered ``os.write`` (it survives SIGKILL):
``BEGIN <op> <ids>`` before the call, ``ACK <op> <ids>`` after it returned (for an add,
the ids the call returned). ``READY`` follows opening (which rolls an earlier crash
forward). With ``--pause``, the memory side's embedder logs ``MEMWRITE`` and waits the
first time the measured operation embeds a memory: the documents are written by then,
and the test kills the process inside the memory write.

    python memory_crash_worker.py SCENARIO STORE ACKFILE SEED [--pause]

Scenarios: ``add`` (one batch of 100 short documents), ``delete`` (60 documents added,
then deleted in one call), ``update`` (one document's content replaced), ``random``
(a seeded run of batch adds, updates and deletes).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from remy_reliability_support import TokenHashEmbedder

from remy_retriever import Retriever
from remy_retriever.memory import LinkedDocuments, MemoryStore

DOCS = "docs"
MEMORIES = "memories"
TAG = "crash"


class PausingEmbedder(TokenHashEmbedder):
    """The token-hash embedder; once armed, its first embedding logs ``MEMWRITE`` and
    waits for the kill."""

    def __init__(self) -> None:
        super().__init__()
        self.armed: Callable[[], None] | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        signal_kill, self.armed = self.armed, None
        if signal_kill is not None and texts:
            signal_kill()
            time.sleep(120)
        return super().embed_documents(texts)


def content(mark: str, version: int) -> str:
    """A short note (one chunk) with a word only it contains."""
    return f"Note {mark} version {version}: keep the river stone by the maple."


def marker(seed: int, n: int) -> str:
    return f"mk{seed}x{n}q"


def open_linked(store: str, memory_embedder: Any = None) -> tuple[Retriever, LinkedDocuments]:
    r = Retriever(store, collection=DOCS, embedder=TokenHashEmbedder())
    memories = MemoryStore(
        collection=MEMORIES, retriever=r, embedder=memory_embedder or TokenHashEmbedder()
    )
    return r, LinkedDocuments(memories)


def run(scenario: str, store: str, acks: str, seed: int, pause: bool) -> None:
    fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    embedder = PausingEmbedder()
    _, linked = open_linked(store, embedder)
    log("READY")

    def arm() -> None:
        if pause:
            embedder.armed = lambda: log("MEMWRITE")

    def add(marks: list[str]) -> list[str]:
        docs = [
            linked.prepare(content=content(m, 0), tag=TAG, custom_id=None, metadata={"mark": m})
            for m in marks
        ]
        log(f"BEGIN ADD {','.join(marks)}")
        outcomes = linked.add_many(docs)
        ids = [str(o) for o in outcomes]
        log(f"ACK ADD {','.join(marks)} {','.join(ids)}")
        return ids

    def update(doc_id: str, mark: str, version: int) -> None:
        log(f"BEGIN UPD {doc_id} {mark} {version}")
        linked.update(doc_id, content=content(mark, version))
        log(f"ACK UPD {doc_id} {mark} {version}")

    def delete(ids: list[str]) -> None:
        log(f"BEGIN DEL {','.join(ids)}")
        linked.delete(ids)
        log(f"ACK DEL {','.join(ids)}")

    rng = random.Random(seed)
    if scenario == "add":
        arm()
        add([marker(seed, n) for n in range(100)])
    elif scenario == "delete":
        ids = add([marker(seed, n) for n in range(60)])
        arm()
        delete(ids)
    elif scenario == "update":
        marks = [marker(seed, n) for n in range(5)]
        ids = add(marks)
        arm()
        update(ids[2], marks[2], 7)
    else:
        alive: dict[str, str] = {}  # id -> mark
        n = 0
        for _ in range(40):
            roll = rng.random()
            if roll < 0.5 or len(alive) < 3:
                marks = [marker(seed, n + i) for i in range(rng.randint(1, 20))]
                n += len(marks)
                alive.update(zip(add(marks), marks))
            elif roll < 0.75:
                doc_id = rng.choice(sorted(alive))
                update(doc_id, alive[doc_id], rng.randint(1, 10_000))
            else:
                doomed = rng.sample(sorted(alive), rng.randint(1, min(10, len(alive))))
                delete(doomed)
                for doc_id in doomed:
                    alive.pop(doc_id)
    log("DONE")
    os._exit(0)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), "--pause" in sys.argv[5:])
