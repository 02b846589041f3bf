"""Worker processes for the cross-process stress and writer-fairness tests.

Each mode opens the store, prints READY, waits until the file GO exists, works, and
prints one JSON line with what it did and every error it met (it never raises):

python stress_worker.py STORE EMBEDDER GO write SECONDS       -- add, update and delete
    documents for SECONDS
python stress_worker.py STORE EMBEDDER GO search SECONDS SEED -- search in every mode,
    with and without filters, for SECONDS, opening the store afresh every 2 s; checks
    every hit against its filter
python stress_worker.py STORE EMBEDDER GO fair NAME N HOLD LOG -- N one-document adds,
    each holding the writer lock at least HOLD seconds; appends "NAME wait I" to LOG when
    add I asks for the lock and "NAME got I" once it holds it (lock_timeout 60 s)

EMBEDDER: "fake" (TokenHashEmbedder) or "minilm" (the real default model).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from remy_reliability_support import MODES, TokenHashEmbedder, ZipfText

from remy_retriever import Document, Retriever

COLLECTION = "stress-kb"
TENANTS = ("acme", "globex", "initech")
#: Searchers open the store afresh this often (seconds).
REOPEN_EVERY = 2.0
_TEXT = ZipfText(size=3000, seed=11)


def make_document(n: int, version: int, rng: np.random.Generator) -> Document:
    """A Markdown document of 1-4 sections (some long enough for several chunks), with
    the metadata the searchers filter on; ``version`` changes its text."""
    sections = [
        f"## Section {s}\n\n"
        + "\n\n".join(_TEXT.paragraph(rng, int(rng.integers(20, 90))) for _ in range(3))
        for s in range(int(rng.integers(1, 5)))
    ]
    text = f"# Report {n} v{version}\n\nmarker{n}x revision{version}\n\n" + "\n\n".join(sections)
    return Document(
        id=f"doc{n}",
        text=text,
        title=f"Report {n}",
        metadata={"tenant": TENANTS[n % 3], "year": 2000 + n % 25, "version": version},
    )


def open_store(store: str, embedder: str, **kwargs: Any) -> Retriever:
    chosen: Any = TokenHashEmbedder() if embedder == "fake" else "default"
    return Retriever(store, collection=COLLECTION, embedder=chosen, **kwargs)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _wait_for(go: Path) -> None:
    print("READY", flush=True)
    deadline = time.monotonic() + 300
    while not go.exists():
        if time.monotonic() > deadline:
            msg = f"{go} never appeared"
            raise TimeoutError(msg)
        time.sleep(0.01)


def write(r: Retriever, seconds: float) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    pick = random.Random(5)
    alive = {int(d[3:]) for page in r._sync.table.iter_metadata() for d, _ in page}
    versions = dict.fromkeys(alive, 0)
    ops: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    n = max(alive, default=0) + 1
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        roll = pick.random()
        try:
            if roll < 0.45 or len(alive) < 10:
                batch = [make_document(n + i, 0, rng) for i in range(pick.randint(1, 3))]
                r.add(batch)
                for i in range(len(batch)):
                    alive.add(n + i)
                    versions[n + i] = 0
                n += len(batch)
                ops["add"] += 1
            elif roll < 0.8:
                target = pick.choice(sorted(alive))
                versions[target] += 1
                r.add([make_document(target, versions[target], rng)])
                ops["update"] += 1
            else:
                victims = pick.sample(sorted(alive), pick.randint(1, 2))
                r.delete([f"doc{v}" for v in victims])
                alive.difference_update(victims)
                ops["delete"] += 1
        except Exception as exc:
            errors[_describe(exc)] += 1
    return {"ops": dict(ops), "errors": dict(errors), "documents": len(alive)}


def _filters(
    pick: random.Random,
) -> tuple[dict[str, Any] | None, Callable[[Mapping[str, Any]], bool]]:
    tenant = pick.choice(TENANTS)
    year = pick.randint(2000, 2024)
    choice = pick.randrange(5)
    if choice == 0:
        return None, lambda m: True
    if choice == 1:
        return {"tenant": tenant}, lambda m: m.get("tenant") == tenant
    if choice == 2:
        return {"year": {"$gte": year}}, lambda m: m.get("year", -1) >= year
    if choice == 3:
        pair = pick.sample(TENANTS, 2)
        return {"tenant": {"$in": pair}}, lambda m: m.get("tenant") in pair
    return (
        {"$and": [{"tenant": tenant}, {"year": {"$lt": year}}]},
        lambda m: m.get("tenant") == tenant and m.get("year", 9999) < year,
    )


def search(
    r: Retriever, seconds: float, seed: int, reopen: Callable[[], Retriever]
) -> dict[str, Any]:
    """Searches until ``seconds`` are up; every :data:`REOPEN_EVERY` seconds it also
    opens the store afresh (opening while another process writes must work too)."""
    pick = random.Random(seed)
    rng = np.random.default_rng(seed)
    done: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    hits_seen = 0
    opens = 0
    end = time.monotonic() + seconds
    opened_at = time.monotonic()
    while time.monotonic() < end:
        if time.monotonic() - opened_at > REOPEN_EVERY:
            opened_at = time.monotonic()
            try:
                fresh = reopen()
            except Exception as exc:
                errors[f"open: {_describe(exc)}"] += 1
            else:
                r.close()
                r, opens = fresh, opens + 1
        mode = MODES[pick.randrange(3)]
        where, keep = _filters(pick)
        query = pick.choice(
            [f"marker{pick.randrange(200)}x", " ".join(_TEXT.words_for(rng, pick.randint(1, 4)))]
        )
        try:
            hits = r.search(
                query,
                mode=mode,
                k=pick.choice([3, 10]),
                where=where,
                explain=pick.random() < 0.2,
                highlight=pick.random() < 0.2,
                expand=pick.random() < 0.2,
            )
        except Exception as exc:
            errors[f"{mode}: {_describe(exc)}"] += 1
            continue
        done[mode] += 1
        hits_seen += len(hits)
        for hit in hits:
            if not keep(hit.metadata):
                errors[f"{mode}: hit {hit.id} {hit.metadata} breaks filter {where}"] += 1
            if not hit.text or not hit.citation.document_id.startswith("doc"):
                errors[f"{mode}: malformed hit {hit.id}"] += 1
    r.close()
    return {"searches": dict(done), "hits": hits_seen, "opens": opens, "errors": dict(errors)}


class Holding(TokenHashEmbedder):
    """Embeds (so holds the writer lock) for at least ``hold`` seconds, first calling
    ``on_embed`` (from inside the lock)."""

    def __init__(self, hold: float, on_embed: Callable[[], None]) -> None:
        super().__init__()
        self.hold = hold
        self.on_embed = on_embed

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.on_embed()
        time.sleep(self.hold)
        return super().embed_documents(texts)


def fair(r: Retriever, name: str, n: int, log: Path, current: list[int]) -> dict[str, Any]:
    def note(event: str) -> None:
        # O_APPEND writes of one short line land whole and in order across processes.
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{name} {event} {current[0]}\n".encode())
        finally:
            os.close(fd)

    lock = r._sync.write_lock
    plain_acquire = lock.acquire

    def acquire(blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking and not lock.held:
            note("wait")
        return plain_acquire(blocking, timeout)

    lock.acquire = acquire  # type: ignore[method-assign]
    assert isinstance(r.embedder, Holding)
    r.embedder.on_embed = lambda: note("got")
    errors: Counter[str] = Counter()
    for i in range(n):
        current[0] = i
        try:
            r.add([Document(id=f"{name}{i}", text=f"written by {name}, number {i}")])
        except Exception as exc:
            errors[_describe(exc)] += 1
    return {"errors": dict(errors)}


def main(argv: list[str]) -> None:
    store, embedder, go, mode = argv[0], argv[1], Path(argv[2]), argv[3]
    try:
        current = [0]
        if mode == "fair":
            holding = Holding(float(argv[6]), lambda: None)
            r = Retriever(store, collection=COLLECTION, embedder=holding, lock_timeout=60)
        else:
            r = open_store(store, embedder)
        _wait_for(go)
        if mode == "search":  # closes the store it ends with
            shared = r.embedder  # loaded once, also for the stores it opens afresh
            fresh = lambda: Retriever(store, collection=COLLECTION, embedder=shared)  # noqa: E731
            report = search(r, float(argv[4]), int(argv[5]), fresh)
        else:
            report = (
                write(r, float(argv[4]))
                if mode == "write"
                else fair(r, argv[4], int(argv[5]), Path(argv[7]), current)
            )
            r.close()
    except Exception as exc:
        report = {"errors": {f"worker failed: {_describe(exc)}": 1}}
        traceback.print_exc()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
