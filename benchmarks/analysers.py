"""The lexical analysers: nDCG@10 of BM25 with each language's analyser against
``"english"`` on a small judged collection per language, and what analysis costs per
indexed MB and per query for every analyser.

    python -m benchmarks.analysers

The collections are in ``benchmarks/data/analysers/<name>/`` (BEIR layout, written for
this repository; ``PROVENANCE.md`` there says how the queries and judgments were made).
A folder is named after its analyser, except Chinese, Japanese and Korean, which use
``"cjk"``; ``"dutch_porter"`` is judged on the Dutch collection too. Each collection is
indexed twice into the real lexical index (tantivy), once with its analyser and once
with ``"english"``, and every judged query is searched lexically (k=10, title and text
indexed as one field, as ``Retriever`` does).

The cost part analyses the same text with every analyser in one run: all the
collections' documents together (every script) and all their queries (``query_terms``),
``--rounds`` passes after one untimed warm-up pass (so each stemmer's cache is warm, as it
is on a real corpus with repeated words), every pass running each analyser in turn
(round-robin, so a change in the machine's load hits all alike). It reports the median
pass as milliseconds per MB of UTF-8 text and microseconds per query, and the ratio to
``"english"`` of the same run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from remy_retriever.evaluation.beir import BeirDataset, load_beir
from remy_retriever.schema.records import LexicalRecord
from remy_retriever.stores.lexical import LexicalIndex
from remy_retriever.text.analyzers import ANALYZER_NAMES, get_analyzer

DATA_DIR = common.ROOT / "benchmarks" / "data" / "analysers"
#: Collections whose analyser is not named after their folder.
_ANALYSER_OF = {"chinese": "cjk", "japanese": "cjk", "korean": "cjk"}
#: Analysers judged on another language's collection too: Dutch's second stemmer.
_ALSO_ON = {"dutch": ("dutch_porter",)}
BASELINE = "english"
K = 10


def collections(root: Path = DATA_DIR) -> dict[str, str]:
    """Every judged collection under ``root``: folder name -> its analyser's name."""
    return {
        p.name: _ANALYSER_OF.get(p.name, p.name)
        for p in sorted(root.iterdir())
        if (p / "corpus.jsonl").is_file()
    }


def judged(root: Path = DATA_DIR) -> list[tuple[str, str, str]]:
    """Every (label, collection folder, analyser) the quality part measures: each
    collection with its analyser, plus the analysers of :data:`_ALSO_ON`."""
    out = []
    for name, analyser in collections(root).items():
        out.append((name, name, analyser))
        out += [(f"{name} ({also})", name, also) for also in _ALSO_ON.get(name, ())]
    return out


def _records(dataset: BeirDataset) -> list[LexicalRecord]:
    return [
        LexicalRecord(f"{doc_id}#0", doc_id, f"{title}\n{text}".strip(), {}, str(n))
        for n, (doc_id, (title, text)) in enumerate(sorted(dataset.corpus.items()))
    ]


def lexical_run(dataset: BeirDataset, analyser: str) -> dict[str, dict[str, float]]:
    """Each judged query's top ``K`` documents by BM25 in a real lexical index analysed
    with ``analyser``: ``{query id: {document id: score}}``."""
    run: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex(Path(tmp) / "lex")
        index.analyzer = get_analyzer(analyser)
        index.upsert(_records(dataset))
        for qid, text in dataset.queries.items():
            hits = index.search(text, K)
            run[qid] = {chunk_id.split("#", 1)[0]: score for chunk_id, score in hits}
        index.close()
    return run


def ndcg10(dataset: BeirDataset, analyser: str) -> tuple[float, dict[str, float]]:
    """Mean nDCG@10 of lexical search with ``analyser`` (ir-measures), and per query."""
    import ir_measures  # lazy: pulls in pandas

    measure = ir_measures.parse_measure(f"nDCG@{K}")
    run = lexical_run(dataset, analyser)
    per_query = {qid: 0.0 for qid in dataset.queries}
    for metric in ir_measures.iter_calc([measure], dataset.qrels, run):
        per_query[metric.query_id] = float(metric.value)
    return statistics.fmean(per_query.values()), per_query


def quality(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, name, analyser in judged(root):
        dataset = load_beir(root / name)
        right, right_q = ndcg10(dataset, analyser)
        english, english_q = ndcg10(dataset, BASELINE)
        out[label] = {
            "analyser": analyser,
            "documents": len(dataset.corpus),
            "queries": len(dataset.queries),
            "judgments": sum(len(j) for j in dataset.qrels.values()),
            "ndcg10": round(right, 4),
            "ndcg10_english": round(english, 4),
            "gain": round(right - english, 4),
            "queries_better": sum(right_q[q] > english_q[q] + 1e-9 for q in right_q),
            "queries_worse": sum(right_q[q] < english_q[q] - 1e-9 for q in right_q),
        }
    return out


def cost(root: Path, rounds: int) -> dict[str, Any]:
    """Every analyser over the same documents and queries (all collections), and each
    judged analyser against ``english`` over its own collection's documents."""
    texts: list[str] = []
    queries: list[str] = []
    for name in collections(root):
        dataset = load_beir(root / name)
        texts += [f"{title}\n{text}".strip() for title, text in dataset.corpus.values()]
        queries += list(dataset.queries.values())
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    chosen = [get_analyzer(name) for name in ANALYZER_NAMES]
    for analyser in chosen:  # warm-up: stopword list loaded, stem cache filled
        for text in texts:
            analyser.terms(text)
    passes: dict[str, list[float]] = {a.name: [] for a in chosen}
    query_passes: dict[str, list[float]] = {a.name: [] for a in chosen}
    for _ in range(rounds):  # round-robin, so a change in the machine's load hits all alike
        for analyser in chosen:
            began = time.perf_counter()
            for text in texts:
                analyser.terms(text)
            passes[analyser.name].append(time.perf_counter() - began)
            began = time.perf_counter()
            for query in queries:
                analyser.query_terms(query)
            query_passes[analyser.name].append(time.perf_counter() - began)
    per: dict[str, Any] = {}
    for name in ANALYZER_NAMES:
        index_s, query_s = statistics.median(passes[name]), statistics.median(query_passes[name])
        per[name] = {
            "ms_per_mb": round(index_s * 1000 / megabytes, 1),
            "mb_per_s": round(megabytes / index_s, 2),
            "us_per_query": round(query_s * 1e6 / len(queries), 1),
        }
    base = per[BASELINE]
    own = _own_text(root, rounds)
    for row in per.values():
        row["index_ratio"] = round(row["ms_per_mb"] / base["ms_per_mb"], 2)
        row["query_ratio"] = round(row["us_per_query"] / base["us_per_query"], 2)
    return {
        "documents": len(texts),
        "megabytes": round(megabytes, 3),
        "queries": len(queries),
        "rounds": rounds,
        "analysers": per,
        "own_text": own,
    }


def _own_text(root: Path, rounds: int) -> dict[str, Any]:
    """Per judged (collection, analyser): ms per MB of its own documents, with it and with
    ``english``, the two taken in turn ``rounds`` times (medians)."""
    out: dict[str, Any] = {}
    for label, name, analyser_name in judged(root):
        dataset = load_beir(root / name)
        texts = [f"{title}\n{text}".strip() for title, text in dataset.corpus.values()]
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        pair = (get_analyzer(analyser_name), get_analyzer(BASELINE))
        times: dict[str, list[float]] = {"own": [], "english": []}
        for analyser in pair:
            for text in texts:
                analyser.terms(text)
        for _ in range(rounds):
            for key, analyser in zip(("own", "english"), pair):
                began = time.perf_counter()
                for text in texts:
                    analyser.terms(text)
                times[key].append(time.perf_counter() - began)
        own_ms, english_ms = (statistics.median(times[k]) * 1000 / megabytes for k in times)
        out[label] = {
            "ms_per_mb": round(own_ms, 1),
            "english_ms_per_mb": round(english_ms, 1),
            "ratio": round(own_ms / english_ms, 2),
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {"quality": quality(args.data), "cost": cost(args.data, args.rounds)}


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    rows = [
        [
            name,
            f"`{q['analyser']}`",
            q["documents"],
            q["queries"],
            f"{q['ndcg10']:.3f}",
            f"{q['ndcg10_english']:.3f}",
            f"{q['gain']:+.3f}",
            f"{q['queries_better']} / {q['queries_worse']}",
            r["cost"]["own_text"][name]["ms_per_mb"],
            r["cost"]["own_text"][name]["ratio"],
        ]
        for name, q in r["quality"].items()
    ]
    c = r["cost"]
    cost_rows = [
        [
            f"`{name}`",
            a["ms_per_mb"],
            a["mb_per_s"],
            a["index_ratio"],
            a["us_per_query"],
            a["query_ratio"],
        ]
        for name, a in c["analysers"].items()
    ]
    return (
        common.header_md("Lexical analysers: quality against english, and cost", data)
        + "\nLexical-only nDCG@10 (BM25, tantivy, k=10) on the judged collections of "
        "`benchmarks/data/analysers/` (written for this repository; see its PROVENANCE.md), "
        "with the language's analyser and with `english`; queries better / worse counts the "
        "queries whose nDCG@10 the right analyser raises / lowers; analysis ms per MB is the "
        "analyser's over the collection's own documents, and x english its ratio to `english` "
        "over the same documents (medians, the two taken in turn).\n\n"
        + common.md_table(
            [
                "collection",
                "analyser",
                "docs",
                "queries",
                "nDCG@10",
                "nDCG@10 english",
                "gain",
                "queries better / worse",
                "analysis ms per MB",
                "x english",
            ],
            rows,
        )
        + f"\n\nAnalysis cost, every analyser over the same text in one run: "
        f"{c['documents']} documents ({c['megabytes']} MB of UTF-8, every collection's "
        f"script) and {c['queries']} queries, the median of {c['rounds']} passes per analyser "
        "taken round-robin after a warm-up pass; ratios are to `english`.\n\n"
        + common.md_table(
            ["analyser", "ms per MB", "MB/s", "x english", "µs per query", "x english"],
            cost_rows,
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="analysers")
    args = parser.parse_args()
    return common.run_and_publish(args, "analysers", run, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
