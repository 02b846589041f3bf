"""Smoke run of every benchmark entry point at tiny sizes (the real benchmarks are not run
in CI). Outputs go to a temporary folder, never to benchmarks/results. Peer systems
(LangChain, LlamaIndex, bm25s, rank_bm25) are left out: their packages are only in
benchmarks/requirements.txt, not in the library's dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import load_loop

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TOPICS = load_loop.TOPICS[:6]


@pytest.fixture(scope="module")
def beir_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BEIR folder: 36 documents on 6 topics, one query per topic."""
    root = tmp_path_factory.mktemp("tinybeir")
    (root / "qrels").mkdir()
    with (root / "corpus.jsonl").open("w") as fh:
        for i in range(36):
            topic = TOPICS[i % len(TOPICS)]
            text = f"Document {i}. {topic}. " + " ".join(
                f"{topic.split()[j % 3]} note {i} part {j}." for j in range(12)
            )
            fh.write(json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": text}) + "\n")
    with (root / "queries.jsonl").open("w") as fh:
        for q, topic in enumerate(TOPICS):
            fh.write(json.dumps({"_id": f"q{q}", "text": " ".join(topic.split()[:3])}) + "\n")
    with (root / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in range(len(TOPICS)):
            for i in range(q, 36, len(TOPICS)):
                fh.write(f"q{q}\td{i}\t1\n")
    return root


def _run(module: str, *args: str) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert proc.returncode == 0, f"{module} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _outputs(out: Path, name: str) -> dict[str, Any]:
    for suffix in (".json", ".md", ".png"):
        path = out / f"{name}{suffix}"
        assert path.is_file() and path.stat().st_size > 0, f"missing {path}"
    data: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    machine = data["machine"]
    assert machine["cores"] >= 1 and machine["memory_gib"] > 0
    assert machine["load_average_start"] and machine["load_average_end"]
    assert data["versions"]["remy-retriever"]
    assert "|" in (out / f"{name}.md").read_text()
    return data


def test_quality_smoke(tmp_path: Path, beir_dir: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.quality",
        "--dataset",
        str(beir_dir),
        "--systems",
        "ours",
        "--no-sweep",
        "--eval-cache",
        str(tmp_path / "eval"),
        "--cache",
        str(tmp_path / "cache"),
        "--out",
        str(out),
    )
    data = _outputs(out, "quality")
    ours = data["datasets"][0]["systems"]["ours"]
    assert ours["chunks_identical"] is True
    assert set(ours["modes"]) == {
        "lexical",
        "semantic",
        "hybrid",
        "hybrid-rrf",
        "hybrid-convex-a0.4",
    }
    for mode in ours["modes"]:
        m = ours["modes"][mode]
        assert 0.0 <= m["nDCG@10"] <= 1.0 and 0.0 <= m["R@100"] <= 1.0
        assert m["p50_ms"] > 0 and m["p95_ms"] >= m["p50_ms"]
    assert ours["modes"]["hybrid-rrf"]["nDCG@10"] > 0.5  # the topics are easy to find
    assert ours["peak_rss_mib"] > 0 and ours["build_s"] > 0


def test_scale_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.scale",
        "--sizes",
        "1000",
        "--queries",
        "20",
        "--peers",
        "--probe-min",
        "1000",
        "--cache",
        str(tmp_path / "cache"),
        "--out",
        str(out),
    )
    data = _outputs(out, "scale")
    size = data["sizes"][0]
    assert "error" not in size, size
    ingest = size["ours_ingest"]
    assert ingest["ingested"] == 1000 and ingest["chunks_per_s"] > 0
    assert ingest["dense_chunks_per_s"] > 0 and ingest["lexical_chunks_per_s"] > 0
    for mode in ("lexical", "semantic", "hybrid"):
        for key in (f"ours/{mode}", f"ours/{mode}+where"):
            assert size["latency"][key]["n"] == 20 and size["latency"][key]["p50_ms"] > 0
    probe = size["ours_add_delete_1000"]
    assert probe["add_visible_s"] is not None and probe["delete_visible_s"] is not None
    assert probe["count_after"] == 1000
    assert size["ours_disk_mib"]["chroma"] > 0 and size["ours_peak_rss_mib"] > 0


def test_ingest_smoke(tmp_path: Path, beir_dir: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.ingest",
        "--dataset",
        str(beir_dir),
        "--max-docs",
        "24",
        "--reps",
        "1",
        "--out",
        str(out),
    )
    r = _outputs(out, "ingest")["result"]
    assert r["documents"] == 24 and r["chunks"] >= 24
    assert r["texts_identical"] is True
    assert r["raw_encode_median_s"] > 0 and r["add_median_s"] > 0
    assert 0 <= r["reingest_pct_of_first"] < 100


def test_rerank_smoke(tmp_path: Path, beir_dir: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.rerank",
        "--dataset",
        str(beir_dir),
        "--depths",
        "5",
        "10",
        "--queries",
        "3",
        "--cache",
        str(tmp_path / "cache"),
        "--out",
        str(out),
    )
    r = _outputs(out, "rerank")["result"]
    assert r["seeded_untrained_head"] is True
    for depth in ("5", "10"):
        assert r["depths"][depth]["n"] == 3 and r["depths"][depth]["pairs_per_s"] > 0


def test_hnsw_profile_smoke(tmp_path: Path) -> None:
    import numpy as np

    cache = tmp_path / "cache"
    real = cache / "quality" / "tiny-0"
    real.mkdir(parents=True)
    rng = np.random.default_rng(3)
    np.save(real / "chunks.npy", rng.standard_normal((300, 384)).astype(np.float32))
    np.save(real / "queries.npy", rng.standard_normal((12, 384)).astype(np.float32))
    out = tmp_path / "results"
    for dataset in ("tiny", "absent"):
        _run(
            "benchmarks.hnsw",
            "--n",
            "1500",
            "--ef",
            "32",
            "8",
            "--adds",
            "1",
            "--dataset",
            dataset,
            "--cache",
            str(cache),
            "--out",
            str(out),
            "--name",
            f"hnsw-{dataset}",
        )
    r = _outputs(out, "hnsw-tiny")["result"]
    assert r["recall_data"] == {"dataset": "tiny-0", "chunks": 300, "queries": 12}
    for ef in ("32", "8"):
        row = r["rows"][ef]
        assert row["build_records_per_s"] > 0 and row["add_1000_median_s"] > 0
        assert 0 < row["recall_at_10"] <= 1
    absent = _outputs(out, "hnsw-absent")["result"]
    assert absent["recall_data"] is None
    assert "recall_at_10" not in absent["rows"]["32"]
    assert "recall not measured" in (out / "hnsw-absent.md").read_text()


def test_ingest_files_scores_can_fail(tmp_path: Path) -> None:
    """The quality scores of benchmarks.ingest_files count damage: a perfect extraction
    scores 100%, a cut probe, a wrong page, leaked boilerplate and raw tags are seen."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.ingest_files import Extracted, quality
        from benchmarks.ingest_files_corpus import make_corpus
    finally:
        sys.path.remove(str(ROOT))

    specs = make_corpus(tmp_path / "docs", pdfs=1, html=1, docx=0, pages=5)
    pdf, page = specs[0], specs[1]
    pages = [" ".join(p.text for p in pdf.probes if p.page == n) for n in range(1, 6)]
    perfect = {
        pdf.name: Extracted("\n".join(pages), pages, []),
        page.name: Extracted(" ".join(p.text for p in page.probes), None, []),
    }
    good = quality(specs, perfect)
    assert good["intact_pct"] == 100 and good["paged_pct"] == 100
    assert good["boilerplate_words_leaked"] == 0 and good["html_tags_in_text"] == 0

    first = pdf.probes[0].text
    cut = first[:20] + "\n\n" + pages[4] + "\n\n" + first[20:]  # a probe split apart
    shifted = [*pages[1:], pages[0]]  # right text, wrong pages
    damaged = {
        pdf.name: Extracted("\n".join([cut, *pages[1:]]), shifted, []),
        page.name: Extracted(
            perfect[page.name].text + " <div>" + page.boilerplate["script"] + "</div>", None, []
        ),
    }
    bad = quality(specs, damaged)
    assert bad["probes_intact"] == good["probes_intact"] - 1
    assert bad["paged_pct"] < 50
    assert bad["boilerplate_leaked_by_kind"] == {"script": 1}
    assert bad["html_tags_in_text"] == 2


def test_ingest_files_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.ingest_files",
        "--systems",
        "ours",
        "--pdfs",
        "2",
        "--html",
        "2",
        "--docx",
        "2",
        "--pages",
        "5",
        "--reps",
        "1",
        "--out",
        str(out),
    )
    r = _outputs(out, "ingest-files")["result"]
    assert r["corpus"]["files"] == {"pdf": 2, "html": 2, "docx": 2}
    ours = r["systems"]["ours"]
    for p in ours["formats"].values():
        assert p["extract_median_s"] > 0 and p["files_per_s"] > 0
    q = ours["quality"]
    assert q["probes"] == r["corpus"]["probes"] > 0
    # Ours' loaders keep every probe whole and on its page, and drop all boilerplate.
    assert q["intact_pct"] == 100 and q["paged_pct"] == 100, q
    assert q["boilerplate_words_leaked"] == 0 and q["html_tags_in_text"] == 0, q
    assert ours["embedding"]["chunks"] > 0 and ours["embedding"]["embed_s"] > 0
    ingest = r["ours_ingest"]
    assert ingest["files_added"] == 6 and ingest["files_failed"] == 0
    assert ingest["page_test_pct"] == 100, ingest


def test_mcp_latency_smoke(tmp_path: Path, beir_dir: Path) -> None:
    out = tmp_path / "results"
    _run(
        "benchmarks.mcp_latency",
        "--dataset",
        str(beir_dir),
        "--max-docs",
        "24",
        "--queries",
        "6",
        "--rounds",
        "1",
        "--out",
        str(out),
    )
    r = _outputs(out, "mcp-latency")["result"]
    assert r["documents"] == 24 and r["queries"] == 6
    for system in ("in-process", "mcp-stdio", "mcp-ping"):
        assert r["latency_ms"][system]["n"] == 6 and r["latency_ms"][system]["p50_ms"] > 0
    assert isinstance(r["target_met"], bool)


def test_onnx_backends_smoke(tmp_path: Path, beir_dir: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    out = tmp_path / "results"
    _run(
        "benchmarks.onnx_backends",
        "--dataset",
        str(beir_dir),
        "--max-queries",
        "3",
        "--parallel",
        "--out",
        str(out),
    )
    data = _outputs(out, "onnx-backends")
    result = data["result"]
    assert isinstance(result["cpu_flags"], (list, dict))  # recorded, whatever the CPU
    per = result["datasets"][beir_dir.name]
    assert set(per) == {"torch", "onnx", "onnx-int8"}
    for backend, res in per.items():
        assert "error" not in res, (backend, res)
        assert res["ingest"]["chunks"] > 0 and res["ingest"]["chunks_per_s"] > 0
        assert res["query_embedding"]["p50_ms"] > 0
        assert res["quality"]["hybrid"]["nDCG@10"] > 0.5, backend
    # fp32 ONNX ranks exactly as torch does
    assert result["ratios"][beir_dir.name]["onnx"]["ndcg10_loss_semantic"] == 0.0


def test_reachability_profile_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results"
    _run("benchmarks.reachability", "--n", "1200", "--reps", "1", "--out", str(out))
    data = json.loads((out / "reachability.json").read_text())
    assert data["machine"]["load_average_end"] and data["versions"]["remy-retriever"]
    r = data["result"]
    assert r["chunks"] == 1200 and r["build_s"] > 0
    ways = list(r["ways"].values())
    assert [w["checked"] for w in ways] == [0, 1000, 1200]
    assert all(w["median_s"] > 0 for w in ways)
    assert "| doctor --full (every chunk) | 1200 |" in (out / "reachability.md").read_text()


def _serve_run(p50: float, p99: float, errors: int = 0) -> dict[str, Any]:
    side = {"p50_ms": p50, "p99_ms": p99, "per_second": 10.0, "errors": errors}
    idle = {"p50_ms": 1.0, "p99_ms": 2.0, "per_second": 1.0, "errors": 0}
    machine = {"load_average_start": [0.0, 0.0, 0.0], "date": "2026-12-02"}
    return {
        "http": {"search": side, "add": idle},
        "in_process": {"search": idle, "add": idle},
        "machine": machine,
    }


def _ingest_run(files_per_s: float) -> dict[str, Any]:
    return {
        "result": {
            "ours_ingest": {"files_per_s": files_per_s, "files_failed": 0},
            "systems": {"ours": {"files_per_s": files_per_s * 10}},
        },
        "machine": {"date": "2026-12-02"},
    }


def test_ab_summary_takes_the_ratio_of_medians_and_counts_errors(tmp_path: Path) -> None:
    from benchmarks import ab

    runs = {
        "base": ([_serve_run(100, 200), _serve_run(120, 260)], [_ingest_run(8), _ingest_run(6)]),
        "this": ([_serve_run(130, 300, errors=2), _serve_run(90, 180)], [_ingest_run(7)] * 2),
    }
    for side, (serve, ingest) in runs.items():
        (tmp_path / side).mkdir()
        for i, data in enumerate(serve, 1):
            (tmp_path / side / f"serve-load-{i}.json").write_text(json.dumps(data))
        for i, data in enumerate(ingest, 1):
            (tmp_path / side / f"ingest-files-{i}.json").write_text(json.dumps(data))
    data = ab.summarise(tmp_path)
    assert data["ratios"]["search_p50_ms"] == 1.0  # medians 110 and 110
    assert data["ratios"]["search_p99_ms"] == round(240 / 230, 3)
    assert data["ratios"]["ingest_files_per_s"] == 1.0
    assert [r["errors"] for r in data["serve_load"]["this"]] == [2, 0]
    assert "| this | 1 | 130 | 300 | 10.0 | 2 |" in ab.markdown(data, "old", "new")


def test_synthetic_tune_smoke(tmp_path: Path, beir_dir: Path) -> None:
    cache = str(tmp_path / "eval")
    _run("remy_retriever.cli", "eval", str(beir_dir), "--cache", cache, "--mode", "lexical")
    out = tmp_path / "results"
    _run(
        "benchmarks.synthetic_tune",
        *("--dataset", str(beir_dir), "--cache", cache, "--folds", "3", "--out", str(out)),
    )
    data = json.loads((out / "synthetic-tune.json").read_text())
    (name,) = data["collections"]
    row = data[name]
    # Single-chunk documents: too few leakage-free pseudo-queries, so nothing is stored
    # and the current options stay in force.
    assert row["synthetic"]["accepted"] is False and "pseudo-queries" in row["synthetic"]["reason"]
    assert row["nDCG@10"]["synthetic"] == row["nDCG@10"]["current"]
    assert 0.0 <= row["nDCG@10"]["supervised"] <= 1.0
    assert row["supervised"]["protocol"].startswith("3-fold")
    assert data["bar_met"] is False
    assert "| " + name + " |" in (out / "synthetic-tune.md").read_text()
