"""Evaluate retrieval on a BEIR-layout folder (``remy eval``).

The folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/test.tsv`` (``query-id``, ``corpus-id``, ``score`` with a
header). Each document is indexed as its title (as the heading path) plus its text; a
document with neither is skipped. Only queries that appear in the qrels are run.

Ranking rule: a document longer than one chunk ranks by its best chunk (the first time
any of its chunks appears in the fused chunk ranking); later chunks of the same document
are skipped. Metrics come from ``ir-measures`` (nDCG@10, R@100 by default).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..errors import InvalidInputError
from ..schema.document import Document
from ..schema.records import document_id_of

__all__ = [
    "BeirDataset",
    "evaluate",
    "load_beir",
    "load_qrels",
    "load_queries",
    "rank_documents",
]

DEFAULT_MEASURES = ("nDCG@10", "R@100")


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: Mapping[str, tuple[str, str]]  # id -> (title, text)
    queries: Mapping[str, str]  # only the judged ones
    qrels: Mapping[str, Mapping[str, int]]
    fingerprint: str = field(default="")

    def documents(self) -> list[Document]:
        docs = []
        for doc_id, (title, text) in self.corpus.items():
            if not (title.strip() or text.strip()):
                continue
            if not text.strip():
                # Title only: index the title as the text so the document is findable.
                text, title = title, ""
            docs.append(Document(id=doc_id, text=text, title=title.strip() or None))
        return docs


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file; unreadable -> InvalidInputError."""
    try:
        with path.open(encoding="utf-8") as fh:
            yield from enumerate(fh, start=1)
    except UnicodeDecodeError as exc:
        msg = f"{str(path)!r} is not UTF-8 text ({exc.reason}); convert it to UTF-8"
        raise InvalidInputError(msg) from exc
    except OSError as exc:
        msg = f"cannot read {str(path)!r} ({exc.strerror or exc}); check the file"
        raise InvalidInputError(msg) from exc


def _read_jsonl(path: Path, fields: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """``(id, [field values])`` per row: each line a JSON object with an ``_id`` (a string
    or an integer) and optional string ``fields`` (missing or null -> ``""``)."""
    for line_no, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            msg = f"{where} is not valid JSON ({reason}); fix the file"
            raise InvalidInputError(msg) from exc
        if not isinstance(row, dict):
            msg = f'{where} is a JSON {type(row).__name__}, not an object like {{"_id": "d1"}}'
            raise InvalidInputError(msg)
        doc_id = row.get("_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or doc_id == "":
            shown = "missing" if "_id" not in row else f"{doc_id!r:.80}"
            msg = f'{where}: "_id" is {shown}; every row needs an "_id" (a string or integer)'
            raise InvalidInputError(msg)
        values = []
        for name in fields:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                msg = (
                    f'{where}: "{name}" must be a string, got {type(value).__name__} {value!r:.80}'
                )
                raise InvalidInputError(msg)
            values.append(value or "")
        yield str(doc_id), values


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query id: {document id: relevance}}`` from a ``query-id corpus-id score`` TSV
    (tab-separated, an optional header line)."""
    qrels: dict[str, dict[str, int]] = {}
    for line_no, line in _lines(path):
        parts = line.rstrip("\r\n").split("\t")
        if (line_no == 1 and parts[0] == "query-id") or not line.strip():
            continue
        where = f"{path}:{line_no}"
        if len(parts) < 3 or not parts[0] or not parts[1]:
            msg = (
                f"{where} is {line.rstrip()!r:.80}; each line must be "
                "query-id<TAB>corpus-id<TAB>score"
            )
            raise InvalidInputError(msg)
        qrels.setdefault(parts[0], {})[parts[1]] = _score(parts[2], where)
    return qrels


def _score(text: str, where: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value.is_integer() and abs(value) < 2**31):
        msg = (
            f"{where}: the score {text!r:.40} is not an integer; use a relevance grade like 0, 1, 2"
        )
        raise InvalidInputError(msg)
    return int(value)


def load_beir(folder: str | Path, *, split: str = "test") -> BeirDataset:
    """Load a BEIR folder; raises InvalidInputError naming a missing file, or the file
    and line of a malformed row."""
    root = Path(folder)
    needed = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"]
    for path in needed:
        if not path.is_file():
            msg = (
                f"{str(path)!r} is missing; a BEIR folder needs corpus.jsonl, "
                f"queries.jsonl and qrels/{split}.tsv"
            )
            raise InvalidInputError(msg)
    qrels = _read_qrels(needed[2])
    corpus = {
        doc_id: (title, text) for doc_id, (title, text) in _read_jsonl(needed[0], ("title", "text"))
    }
    queries = {qid: text for qid, (text,) in _read_jsonl(needed[1], ("text",)) if qid in qrels}
    digest = hashlib.sha256()
    for path in needed[:1]:
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(1 << 20))
    return BeirDataset(root.resolve().name, corpus, queries, qrels, digest.hexdigest()[:16])


def load_queries(path: str | Path) -> dict[str, str]:
    """``{query id: text}`` from a BEIR ``queries.jsonl`` (``_id``, ``text`` per line)."""
    return {qid: text for qid, (text,) in _read_jsonl(Path(path), ("text",))}


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{query id: {document id: grade}}`` from a BEIR qrels TSV."""
    return _read_qrels(Path(path))


def rank_documents(chunk_ranking: Sequence[tuple[str, float]], depth: int) -> list[str]:
    """Document ids in order of their best chunk (chunk ids are ``doc#position``)."""
    seen: dict[str, None] = {}
    for cid, _ in chunk_ranking:
        doc_id = document_id_of(cid)
        if doc_id not in seen:
            seen[doc_id] = None
            if len(seen) == depth:
                break
    return list(seen)


def evaluate(
    dataset: BeirDataset,
    rank: Callable[[str], Sequence[tuple[str, float]]],
    *,
    depth: int = 100,
    measures: Sequence[str] = DEFAULT_MEASURES,
    progress: bool = False,
    label: str = "queries",
    runs: dict[str, dict[str, float]] | None = None,
) -> dict[str, float]:
    """Run ``rank`` (query -> fused chunk ranking) over the judged queries and score it
    (``progress``: a bar with the time left, named ``label``, on stderr). ``runs``, when
    given, receives each query's ranked documents (id -> score), for per-query measures
    (:mod:`.report`)."""
    import ir_measures  # lazy: pulls in pandas; only `remy eval` needs it

    run: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    queries: Iterable[tuple[str, str]] = dataset.queries.items()
    if progress:
        queries = tqdm(queries, total=len(dataset.queries), unit="query", desc=label)
    for qid, text in queries:
        started = time.perf_counter()
        ranking = rank(text)
        latencies.append((time.perf_counter() - started) * 1000)
        docs = rank_documents(ranking, depth)
        run[qid] = {doc_id: float(depth - i) for i, doc_id in enumerate(docs)}
    if runs is not None:
        runs.update(run)
    parsed = [ir_measures.parse_measure(m) for m in measures]
    scores = ir_measures.calc_aggregate(parsed, dataset.qrels, run)
    out = {str(m): float(scores[m]) for m in parsed}
    out["p50_ms"] = statistics.median(latencies) if latencies else 0.0
    out["p95_ms"] = _percentile(latencies, 95)
    out["queries"] = float(len(latencies))
    return out


def _percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[idx]


def machine_info() -> dict[str, Any]:
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem = 0.0
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "memory_gib": round(mem, 1),
        "date": time.strftime("%Y-%m-%d"),
    }
