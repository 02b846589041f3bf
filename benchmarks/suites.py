"""The benchmark suites: which script measures what, the command of its run of record and
the small-data arguments ``--quick`` runs it with.

Placeholders in the arguments, filled in by :mod:`benchmarks.__main__`:

* ``{beir}``: the shared BEIR collections (``common.BEIR_DIR``) for a run of record; for
  ``--quick``, a small BEIR folder written by :func:`write_quick_beir`;
* ``{cache}``: the benchmarks' cache (``benchmarks/.cache`` or the scratch's);
* ``{out}``: the quick run's results folder;
* ``{base}``: the source tree ``ab`` and ``analyser_identity`` compare with (``--base``).

Every script writes to ``common.RESULTS_DIR`` unless told otherwise: the runs of record
(``benchmarks/results``), or the scratch folder ``--quick`` points it at.

A step whose ``quick`` is ``None`` is not re-run by ``--quick`` (it needs a second source
tree); the runner still checks that its module imports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.load_loop import TOPICS


@dataclass(frozen=True)
class Step:
    """One script: the argument lists of its runs of record, the arguments of its quick
    run (``None``: not re-run by ``--quick``) and the results files the quick run writes
    (names in the results folder, or paths with placeholders)."""

    module: str
    record: tuple[tuple[str, ...], ...]
    quick: tuple[tuple[str, ...], ...] | None
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Suite:
    name: str
    measures: str
    steps: tuple[Step, ...]


Runs = str | tuple[str, ...]


def _runs(runs: Runs) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(r.split()) for r in ((runs,) if isinstance(runs, str) else runs))


def _s(module: str, record: Runs, quick: Runs | None, *outputs: str) -> Step:
    return Step(
        module if "." in module else f"benchmarks.{module}",
        _runs(record),
        None if quick is None else _runs(quick),
        outputs,
    )


_EVAL = "--cache {cache}/eval"
_SCALE = (
    "--queries 100 --ingest bulk --peer-chroma shared --peers bm25s rank_bm25 langchain llamaindex"
)
_SCALE_1M = "--sizes 1000000 --queries 50 --ingest bulk --ingest-budget 3600 --probe-min 2000000"

SUITES: tuple[Suite, ...] = (
    Suite(
        "quality",
        "nDCG@10, recall@100, build time, query latency and peak RSS of ours against "
        "LangChain EnsembleRetriever and LlamaIndex QueryFusionRetriever on the same chunks "
        "and vectors",
        (
            _s(
                "quality",
                (
                    "--dataset {beir}/scifact --name quality-scifact",
                    "--dataset {beir}/cisi --name quality-cisi",
                ),
                "--dataset {beir} --dataset {beir}-b --no-sweep --name quality-quick",
                "quality-quick.json",
            ),
        ),
    ),
    Suite(
        "fusion",
        "the fusion default: offline sweeps of fusion settings and branch variants on "
        "SciFact train, its latency, and what `remy tune` (supervised and --synthetic) buys "
        "on held-out queries",
        (
            _s(
                "quality_sweep",
                (
                    "--dataset {beir}/scifact --split train",
                    "--dataset {beir}/scifact --split test",
                    "--dataset {beir}/cisi",
                ),
                "--dataset {beir} --split test",
                "quality-sweep-quick-test.json",
            ),
            _s(
                "quality_branches",
                (
                    "--dataset {beir}/scifact --split train",
                    "--dataset {beir}/scifact --split test",
                ),
                "--dataset {beir} --split test",
                "quality-branches-quick-test.json",
            ),
            _s(
                "fusion_latency",
                "--dataset {beir}/scifact --dataset {beir}/cisi",
                "--dataset {beir} --rounds 1",
                "fusion-latency.json",
            ),
            _s(
                "tune_holdout",
                "--dataset {beir}/scifact --dataset {beir}/cisi",
                "--dataset {beir} --folds 3",
                "tune-holdout.json",
            ),
            _s(
                "synthetic_tune",
                "--dataset {beir}/medline --dataset {beir}/lisa --dataset {beir}/cisi "
                "--dataset {beir}/cranfield --dataset {beir}/scifact " + _EVAL,
                "--dataset {beir} --folds 3 " + _EVAL,
                "synthetic-tune.json",
            ),
            _s("fusion_report", "", "--out {out}", "fusion-defaults.md"),
        ),
    ),
    Suite(
        "cross-collection",
        "every fusion candidate on five collections, then leave-one-collection-out; and "
        "the per-query cost of the signal-adaptive weight",
        (
            _s(
                "cross_data",
                tuple(
                    f"{{beir}}/{name} {_EVAL} --out {{cache}}/branches"
                    for name in ("scifact", "cisi", "cranfield", "medline", "lisa")
                ),
                (
                    "{beir} " + _EVAL + " --out {cache}/branches",
                    "{beir}-b " + _EVAL + " --out {cache}/branches",
                ),
                "{cache}/branches/quick.json",
                "{cache}/branches/quick-b.json",
            ),
            _s(
                "cross_collection",
                "--branches {cache}/branches",
                "--branches {cache}/branches --collections quick,quick-b",
                "cross-collection.json",
            ),
            _s(
                "signal_latency",
                "--branches {cache}/branches",
                "--branches {cache}/branches --repeat 1",
                "signal-latency.json",
            ),
        ),
    ),
    Suite(
        "scale",
        "ingest rate, disk, memory, write visibility and query latency at 10k, 100k and 1M "
        "chunks against bm25s, rank_bm25, LangChain and LlamaIndex; Chroma's HNSW build "
        "effort; per-filter BM25 statistics; doctor's reachability check",
        (
            _s(
                "scale",
                (
                    f"--sizes 10000 100000 {_SCALE} --name scale",
                    f"{_SCALE_1M} --peers bm25s --name scale-1m",
                    f"{_SCALE_1M} --peers bm25s --ef-construction 32 --name scale-1m-efc32",
                ),
                "--sizes 1200 --queries 10 --peers bm25s rank_bm25 langchain llamaindex "
                "--peer-chroma shared --probe-min 1200 --name scale-quick",
                "scale-quick.json",
            ),
            _s(
                "hnsw",
                "--n 100000 --ef 100 64 32",
                "--n 500 --ef 32 --adds 1 --dataset quick --name hnsw-quick",
                "hnsw-quick.json",
            ),
            _s(
                "tenant_statistics",
                "--dataset {beir}/scifact --copies 10 --tenants 20",
                "--dataset {beir} --copies 2 --tenants 3 --rounds 1",
                "tenant-statistics.json",
            ),
            _s("reachability", "--n 100000 --reps 1", "--n 600 --reps 1", "reachability.json"),
        ),
    ),
    Suite(
        "ingest",
        "what Retriever.add costs beyond embedding, re-ingest, and what a Chroma write "
        "costs by what the record carries",
        (
            _s(
                "ingest",
                "--dataset {beir}/scifact --max-docs 200 --reps 2 --threads 1",
                "--dataset {beir} --reps 1",
                "ingest.json",
            ),
            _s("chroma_write", "--n 3000 --reps 2", "--n 200 --reps 1", "chroma-write.json"),
        ),
    ),
    Suite(
        "files",
        "PDF, HTML and DOCX ingest: extraction quality and throughput against the peers' loaders",
        (
            _s(
                "ingest_files",
                "",
                "--systems ours --pdfs 1 --html 1 --docx 1 --pages 5 --reps 1",
                "ingest-files.json",
            ),
        ),
    ),
    Suite(
        "serve",
        "`remy serve` under concurrent load (the /v3 and /v5 APIs through the supermemory "
        "SDKs), one CLI call end to end, a 100,000-character query, the inspector page; "
        "`ab` compares two source trees",
        (
            _s("serve_load", "", "--clients 2 --seconds 3 --docs 20", "serve-load.json"),
            _s("serve_load_v5", "", "--clients 2 --seconds 3 --docs 20", "serve-load-v5.json"),
            _s("cli_startup", "--reps 3", "--reps 1", "cli-startup.json"),
            _s("long_query", "--reps 5", "--reps 1 --chars 2000", "long-query.json"),
            _s("ui_latency", "--rounds 40", "--rounds 2", "ui-latency.json"),
            _s("ab", "--base {base} --runs 2", None),
        ),
    ),
    Suite(
        "mcp",
        "the MCP search tool over stdio, against the same search in process",
        (
            _s(
                "mcp_latency",
                "--dataset {beir}/scifact --max-docs 1000 --queries 300 --rounds 3",
                "--dataset {beir} --max-docs 40 --queries 5 --rounds 1",
                "mcp-latency.json",
            ),
        ),
    ),
    Suite(
        "embedders",
        "torch against ONNX Runtime fp32 and int8: ingest rate, query embedding latency, "
        "nDCG@10; the int8 recipe and its batch-to-batch variance",
        (
            _s(
                "onnx_backends",
                "--dataset {beir}/scifact --dataset {beir}/cisi --round-robin --name onnx-backends",
                "--dataset {beir} --max-queries 5",
                "onnx-backends.json",
            ),
            _s(
                "int8_recipes",
                "--dataset {beir}/scifact",
                "--dataset {beir} --texts 20",
                "int8-recipes.json",
            ),
            _s(
                "int8_variance",
                "--dataset {beir}/cisi --seeds 3 --name int8-variance-cisi",
                "--dataset {beir} --seeds 1",
                "int8-variance.json",
            ),
        ),
    ),
    Suite(
        "rerank",
        "what the cross-encoder costs per query at each rerank depth",
        (
            _s(
                "rerank",
                "--dataset {beir}/scifact --queries 12 --threads 1",
                "--dataset {beir} --depths 10 --queries 3",
                "rerank.json",
            ),
        ),
    ),
    Suite(
        "adapt",
        "semantic and hybrid nDCG@10 and R@100 before and after `remy adapt`, with its time "
        "and the re-embedding's share; the whole command's time on a 10k-chunk collection",
        (
            _s(
                "adapt",
                (
                    "--work {cache}/adapt --budget 10 --budget-for lisa=15 "
                    "--budget-for scifact=25 --dataset {beir}/medline --dataset {beir}/cranfield "
                    "--dataset {beir}/cisi --dataset {beir}/lisa --dataset {beir}/scifact",
                ),
                ("--work {cache}/adapt --budget 0.5 --dataset {beir}",),
                "adapt.json",
            ),
        ),
    ),
    Suite(
        "analysers",
        "lexical nDCG@10 of each language's analyser against english on a judged "
        "collection per language, and each analyser's cost per indexed MB and per query; "
        "`remy eval` on the five shared collections before analysers (`--base`, a tree at "
        "51f7e5a^) and now, to 4 decimals",
        (
            _s("analysers", "", "--rounds 1", "analysers.json"),
            _s(
                "analyser_identity",
                "--base {base} "
                + " ".join(
                    f"--dataset {{beir}}/{name}"
                    for name in ("medline", "cranfield", "cisi", "lisa", "scifact")
                ),
                "--dataset {beir} --mode lexical --mode hybrid --name analyser-identity-quick",
                "analyser-identity-quick.json",
            ),
        ),
    ),
    Suite(
        "soak",
        "errors, p50/p99 per window and RSS growth under minutes of mixed concurrent queries",
        (
            _s(
                "soak",
                "",
                "--chunks 300 --seconds 4 --threads 2 --window 2 --warmup 1",
                "soak.json",
            ),
        ),
    ),
)

#: Modules no suite runs on their own: the code the suites' scripts share, and tools.
HELPERS: dict[str, str] = {
    "common": "the helpers every script shares (machine, timing, output)",
    "lanes": "`make test-fast` against `make test` in one run of the whole test suite "
    "(`python -m benchmarks.lanes`; too long for `run --quick`)",
    "suites": "this table",
    "targets": "the README's targets table, met or not, from the results of record",
    "readme": "regenerates the docs' tables from the results (`python -m benchmarks.readme`)",
    "scale_data": "the scale suite's synthetic corpus",
    "scale_ours": "the scale suite's build of ours",
    "systems": "the peer systems (LangChain, LlamaIndex, bm25s, rank_bm25) both suites build",
    "scale_report": "the scale suite's tables and plot",
    "sweep_data": "the branch data of the offline fusion sweeps",
    "sweep_bm25": "BM25 recomputed offline for the sweeps",
    "ingest_files_corpus": "the generated PDF/HTML/DOCX folder of the files suite",
    "sdk5_load_client": "the supermemory 5 SDK client loop serve_load_v5 starts",
    "load_loop": "the documents, queries and client loop of both serve benchmarks",
    "ui_setup": "the inspector and browser ui_latency and ui_screenshots share",
    "ui_screenshots": "the README's inspector screenshots (`python -m benchmarks.ui_screenshots`)",
}


def by_name(name: str) -> Suite:
    for suite in SUITES:
        if suite.name == name:
            return suite
    names = ", ".join(s.name for s in SUITES)
    msg = f"unknown suite {name!r}: choose one of {names}"
    raise ValueError(msg)


def write_quick_beir(root: Path) -> Path:
    """Two small BEIR folders, ``quick`` (returned) and ``quick-b`` beside it (the
    leave-one-collection-out of the cross-collection suite needs two): six and four
    documents on each of eight topics, two judged test queries per topic (enough for
    3-fold tuning)."""
    _write_beir(root / "quick-b", 4)
    return _write_beir(root / "quick", 6)


def _write_beir(folder: Path, docs_per_topic: int) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for t, topic in enumerate(TOPICS):
        words = topic.split()
        for d in range(docs_per_topic):
            text = f"{topic}. " + " ".join(
                f"{words[(d + j) % len(words)]} remark {d} item {j}." for j in range(10)
            )
            corpus.append({"_id": f"d{t}-{d}", "title": f"{words[0]} note {d}", "text": text})
        for q, span in enumerate((words[:3], words[-3:])):
            qid = f"q{t}-{q}"
            queries.append({"_id": qid, "text": " ".join(span)})
            qrels += [f"{qid}\td{t}-{d}\t1" for d in range(docs_per_topic)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return folder
