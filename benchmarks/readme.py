"""Refresh every measured number in the docs from benchmarks/results/.

    python -m benchmarks.readme

Two kinds of generated block, in README.md, benchmarks/README.md and SECURITY.md
(:data:`DOCS`); everything outside them is left as written:

* ``<!-- results:NAME -->`` ... ``<!-- /results:NAME -->`` is replaced by
  ``results/NAME.md`` without its first heading line (the benchmark's own table);
* ``<!-- view:NAME -->`` ... ``<!-- /view:NAME -->`` is replaced by ``VIEWS[NAME]``, a
  short summary rendered from the results' JSON (for README.md and SECURITY.md, which
  quote a few numbers rather than whole tables).

``tests/unit/test_docs_numbers.py`` fails when a block differs from what this renders,
so a doc can never quote a number its results do not hold.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import common, targets

README = common.ROOT / "benchmarks" / "README.md"
#: The docs whose generated blocks this refreshes (the decision records included).
DOCS = (
    common.ROOT / "README.md",
    README,
    common.ROOT / "SECURITY.md",
    *sorted((common.ROOT / "docs" / "decisions").glob("*.md")),
)
_BLOCK = re.compile(r"(<!-- (results|view):([\w.-]+) -->\n).*?(<!-- /\2:\3 -->)", re.S)


def _load(results: Path, name: str) -> Any:
    return json.loads((results / f"{name}.json").read_text())


def _fmt(value: float, places: int = 3) -> str:
    return f"{value:.{places}f}"


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


_PEERS = {
    "langchain-ensemble": "LangChain `EnsembleRetriever`",
    "llamaindex-fusion": "LlamaIndex `QueryFusionRetriever`",
}


def _quality(results: Path) -> list[dict[str, Any]]:
    """Each quality run's dataset (the files ``quality-*.json``), by name."""
    out = []
    for path in sorted(results.glob("quality-*.json")):
        data = json.loads(path.read_text())
        if "datasets" not in data:  # quality-sweep-*.json: the offline sweeps
            continue
        for ds in data["datasets"]:
            out.append({**ds, "machine": data["machine"]})
    return sorted(out, key=lambda ds: (-int(ds["queries"]), ds["dataset"]))  # largest first


def _default_mode(ours: dict[str, Any]) -> str:
    """The mode key of the library's default hybrid in a quality run: ``hybrid`` when the
    run records the library default under that name, else the older ``hybrid-<fusion>-a<alpha>``."""
    fusion = ours["library_default_fusion"]
    if "normalization" in fusion and "hybrid" in ours["modes"]:
        return "hybrid"
    return f"hybrid-{fusion['fusion']}-a{fusion['alpha']}"


def _fusion_label(fusion: dict[str, Any]) -> str:
    parts = [str(fusion["fusion"])]
    if fusion.get("normalization"):
        parts.append(f"{fusion['normalization']} scores")
    parts.append(f"alpha {fusion['alpha']}")
    if fusion.get("fill") not in (None, "none"):
        parts.append(f"{fusion['fill']} fill")
    return ", ".join(parts)


def view_quality(results: Path) -> str:
    """README "Evaluation results": ours per mode and both peers, from one run each."""
    rows = ["| dataset | system | nDCG@10 | R@100 | p50 ms |", "|---|---|---|---|---|"]
    leads, dates = [], []
    for ds in _quality(results):
        systems = ds["systems"]
        ours = systems["ours"]
        default = _default_mode(ours)
        fusion = ours["library_default_fusion"]
        name = f"{ds['dataset']} ({ds['queries']} q)"
        for mode, label in (
            ("lexical", "remy lexical (BM25, tantivy)"),
            ("semantic", "remy semantic (MiniLM)"),
            (default, f"**remy hybrid** ({_fusion_label(fusion)})"),
        ):
            m = ours["modes"][mode]
            rows.append(
                f"| {name} | {label} | {_fmt(m['nDCG@10'])} | {_fmt(m['R@100'])} "
                f"| {_ms(m['p50_ms'])} |"
            )
            name = ds["dataset"]
        best_peer = 0.0
        for key, label in _PEERS.items():
            if key not in systems:
                continue
            m = systems[key]["modes"]["hybrid"]
            best_peer = max(best_peer, m["nDCG@10"])
            rows.append(
                f"| {ds['dataset']} | {label} | {_fmt(m['nDCG@10'])} | {_fmt(m['R@100'])} "
                f"| {_ms(m['p50_ms'])} |"
            )
        lead = ours["modes"][default]["nDCG@10"] - best_peer
        leads.append(f"{ds['dataset']} {lead:+.4f}")
        dates.append(f"{ds['dataset']} {ds['machine']['date'][:10]}")
        embedding = systems.get("ours-e2e", {}).get("query_embedding")
        if embedding:
            leads[-1] += f" (query embedding alone: p50 {_ms(embedding['p50_ms'])} ms)"
    machine = _quality(results)[0]["machine"] if _quality(results) else {}
    return (
        "\n".join(rows)
        + "\n\nnDCG@10 lead of remy's default hybrid over the better peer, and what the "
        f"real query embedding adds to the p50 (excluded above): {'; '.join(leads)}. "
        f"Runs: {', '.join(dates)}, {machine.get('cores')} cores "
        f"({machine.get('cpu', '')}).\n"
    )


#: Rows of the offline sweep (benchmarks/quality_sweep.py) for the two defaults.
_CURRENT_ROW, _PREVIOUS_ROW = "convex calib fill a=0.45", "convex minmax missing=zero a=0.4"


def view_fusion(results: Path) -> str:
    """README "How the default fusion was chosen": the offline sweep's numbers for the
    default and the previous default, on SciFact train (where it was chosen) and on the
    test sets (which only confirm), and the latency ratio measured in one run."""
    parts = []
    for name, split in (("scifact", "train"), ("scifact", "test"), ("cisi", "test")):
        path = results / f"quality-sweep-{name}-{split}.json"
        if not path.is_file():
            continue
        rows = json.loads(path.read_text())["rows"]
        now, before = rows[_CURRENT_ROW]["nDCG@10"], rows[_PREVIOUS_ROW]["nDCG@10"]
        parts.append(f"{name} {split} {_fmt(now)} (previous default {_fmt(before)})")
    latency = _load(results, "fusion-latency")["datasets"]
    ratios = [f"{name} {data['p50_ratio']:.2f}x" for name, data in latency.items()]
    return (
        f"nDCG@10 of the default against the previous one (min-max convex, alpha 0.4): "
        f"{'; '.join(parts)}. Hybrid p50 against the previous default, in one run: "
        f"{', '.join(ratios)}.\n"
    )


def view_onnx(results: Path) -> str:
    """README "Embedder backends": each ONNX backend against torch in the one run of
    ``benchmarks/results/onnx-backends.json`` (every backend, every dataset)."""
    data = _load(results, "onnx-backends")
    rows = []
    for name, per in data["result"]["ratios"].items():
        runs = data["result"]["datasets"][name]
        for backend, ratio in per.items():
            rows.append(
                f"| {name} | `{backend}` | {ratio['ingest_speedup']:.2f}x "
                f"({runs[backend]['ingest']['chunks_per_s']:.1f} vs "
                f"{runs['torch']['ingest']['chunks_per_s']:.1f} chunks/s) | "
                f"{ratio['query_p50_ratio']:.2f}x "
                f"({_ms(runs[backend]['query_embedding']['p50_ms'])} vs "
                f"{_ms(runs['torch']['query_embedding']['p50_ms'])} ms) | "
                f"{ratio['ndcg10_loss_semantic_exact']:+.4f} | "
                f"{ratio['ndcg10_loss_hybrid']:+.4f} |"
            )
    load = data["machine"]["load_average_start"]
    text = (
        "Against torch in one run (one backend after another, load average "
        f"{load[0]:.1f} at the start; nDCG@10 loss = torch's minus the backend's, "
        "semantic by exact kNN):\n\n"
        "| dataset | backend | ingest speed-up | query p50 | nDCG@10 loss semantic "
        "| nDCG@10 loss hybrid |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    variance = results / "int8-variance-cisi.json"
    if variance.is_file():
        var = json.loads(variance.read_text())["result"]
        hybrid = var["loss"]["hybrid"]
        text += (
            f"\nint8 with CISI ingested {len(var['int8'])} more times, the documents "
            f"shuffled each time: hybrid loss against fp32 {hybrid['mean']:+.4f} on average "
            f"(sd {hybrid['sd']:.4f}, worst {hybrid['max']:+.4f}; "
            "`benchmarks/results/int8-variance-cisi.md`).\n"
        )
    return text


def _machine_note(data: Any) -> str:
    """The machine a run of record had: its cores, and its load when the run began."""
    machine = data["machine"]
    return f"{machine['cores']} cores, load average {machine['load_average_start'][0]} at the start"


def view_first_eval(results: Path) -> str:
    """README "CLI": how long the first `remy eval` on SciFact embeds, with the default
    embedder (ONNX int8 when the extra is installed) and with torch, from the one run of
    ``onnx-backends`` (``Retriever.add`` of the whole corpus, embedding included)."""
    data = _load(results, "onnx-backends")
    runs = data["result"]["datasets"]["scifact"]
    chunks = runs["onnx-int8"]["ingest"]["chunks"]
    int8, torch = runs["onnx-int8"]["ingest"], runs["torch"]["ingest"]
    return (
        f"SciFact makes {chunks:,} chunks. On a {data['machine']['cores']}-core machine "
        f"the default embedder (ONNX int8) added them at {int8['chunks_per_s']:.1f} "
        f"chunks/s, so the first run takes about {int8['add_s'] / 60:.0f} minutes "
        f"({torch['add_s'] / 60:.0f} with `--embedder-backend torch`: "
        f"`benchmarks/results/onnx-backends.md`).\n"
    )


def view_cli_startup(results: Path) -> str:
    """README "CLI": what one call costs, lexical (no model) and hybrid, and before."""
    data = _load(results, "cli-startup")
    r = data["result"]
    calls = {(c["code"], c["call"]): c for c in r["calls"]}
    lexical = calls[("current", "remy search --mode lexical")]
    hybrid = calls[("current", "remy search (hybrid)")]
    before = [
        c for (code, call), c in calls.items() if code != "current" and call == lexical["call"]
    ]
    then = f" (the code before lazy loading: {before[0]['median_s']:.1f} s)" if before else ""
    loads = "torch and sentence-transformers" if hybrid["imports_torch"] else "no torch: ONNX"
    return (
        f"One `remy search --mode lexical` call took {lexical['median_s']:.1f} s end to end"
        f"{then}, a hybrid one {hybrid['median_s']:.1f} s, which also loads the embedding "
        f"model ({loads}); importing chromadb alone took {r['import_chromadb_median_s']:.1f} s "
        f"(medians of {r['reps']} fresh processes each, {_machine_note(data)}: "
        "`benchmarks/results/cli-startup.md`).\n"
    )


def view_long_query(results: Path) -> str:
    """SECURITY.md "Bounded work": what a 100,000-character query costs."""
    data = _load(results, "long-query")
    r = data["result"]
    m = data["machine"]
    per_mode = ", ".join(
        f"{mode} {row['long_p50_s']:.2f} s (slowest {row['long_max_s']:.2f} s)"
        for mode, row in r["modes"].items()
    )
    return (
        f"  Measured (`benchmarks/results/long-query.md`): a {r['query_chars']:,}-character "
        f"query with explain, highlight and expand took, median of {r['reps']}: "
        f"{per_mode}, over {r['chunks']} chunks with the real MiniLM model on one torch "
        f"thread, {m['cores']} cores shared with other jobs (load average "
        f"{m['load_average_start'][0]} at the start).\n"
    )


def view_ui_latency(results: Path) -> str:
    """README "Retrieval inspector": a search from the page against /v1/search."""
    data = _load(results, "ui-latency")
    r = data["result"]
    verdict = "within" if r["median_ratio"] <= r["bar"] else "over"
    return (
        f"Over {r['rounds']} alternating queries in one run, each call starting on a page "
        "at rest, a search from the page took "
        f"{r['page']['p50_ms']:.1f} ms (median, submit to hits drawn) and the same "
        f"`/v1/search` call {r['api']['p50_ms']:.1f} ms: {r['median_ratio']:.2f}x, "
        f"{verdict} the {r['bar']}x bar ({_machine_note(data)}: "
        "`benchmarks/results/ui-latency.md`).\n"
    )


def view_test_lanes(results: Path) -> str:
    """README "Quick start": the fast lane's share of the full suite's time, one run."""
    data = _load(results, "test-lanes")
    r = data["result"]
    full, fast = r["full"], r["fast"]
    verdict = "under" if r["fast_share"] < 1 / 3 else "over"
    return (
        f"  In one run of every test, `make test` took {full['wall_s'] / 60:.1f} min and the "
        f"{fast['tests']} of its {full['tests']} tests `make test-fast` keeps "
        f"{fast['seconds_in_this_run'] / 60:.1f} min: {r['fast_share']:.0%}, {verdict} a "
        f"third ({_machine_note(data)}: `benchmarks/results/test-lanes.md`).\n"
    )


def view_suites(results: Path) -> str:
    """benchmarks/README.md "Suites": each suite's one command, what it measures and the
    results of record it writes (from :data:`benchmarks.suites.SUITES`)."""
    from benchmarks import suites

    rows = ["| suite | command | measures | scripts |", "|---|---|---|---|"]
    for suite in suites.SUITES:
        scripts = ", ".join(f"`{s.module.removeprefix('benchmarks.')}`" for s in suite.steps)
        rows.append(
            f"| {suite.name} | `python -m benchmarks run {suite.name}` | {suite.measures} "
            f"| {scripts} |"
        )
    return "\n".join(rows) + "\n"


def view_analysers(results: Path) -> str:
    """README "Text in other languages": lexical nDCG@10 with each language's analyser
    against ``english`` on its judged collection, and the spread of analysis cost, from
    the one run of ``benchmarks/results/analysers.json``."""
    data = _load(results, "analysers")
    quality = data["result"]["quality"]
    pairs = [
        f"{name} {_fmt(q['ndcg10'])} vs {_fmt(q['ndcg10_english'])}" for name, q in quality.items()
    ]
    wins = sum(q["gain"] > 0 for q in quality.values())
    per = data["result"]["cost"]["analysers"]
    languages = [a for n, a in per.items() if n not in ("english", "cjk", "code", "simple")]
    low = min(a["index_ratio"] for a in languages)
    high = max(a["index_ratio"] for a in languages)
    return (
        f"Lexical nDCG@10 with the language's analyser vs `english`, on a small judged "
        f"collection per language written for this repository "
        f"(`benchmarks/data/analysers/`): {'; '.join(pairs)}. The right analyser wins on "
        f"{wins} of {len(quality)}. Indexing analysis costs {low:.2f}x to {high:.2f}x "
        f"English's per MB for the Snowball languages, {per['cjk']['index_ratio']:.2f}x for "
        f"`cjk` ({_machine_note(data)}: `benchmarks/results/analysers.md`).\n"
    )


def view_analyser_identity(results: Path) -> str:
    """README "Text in other languages": the English ``remy eval`` numbers before and
    after analysers, from ``benchmarks/results/analyser-identity.json``."""
    data = _load(results, "analyser-identity")
    result = data["result"]
    rows = result["rows"]
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    moved = [r for r in rows if not r["same_own_builds"]]
    also_rebuilt = sum(not r["same_rebuilt"] for r in moved)
    return (
        f"English stores score as before analysers: `remy eval` on {', '.join(datasets)} "
        f"with the engine before them (`{result['trees']['base']['commit'][:7]}`) and with "
        f"them gives the same nDCG@10 and R@100 to 4 decimals for "
        f"{result['same_lexical']} of {result['lexical_numbers']} lexical numbers, and for "
        f"{result['same_one_store']} of {result['numbers']} in every mode when both search "
        f"one store. With a store of its own each, {len(moved)} semantic and hybrid numbers "
        f"move, {also_rebuilt} of them as between two builds of the same tree (Chroma's "
        f"HNSW graph is built by several threads): `benchmarks/results/analyser-identity.md`."
        "\n"
    )


VIEWS: dict[str, Callable[[Path], str]] = {
    "suites": view_suites,
    "analysers": view_analysers,
    "analyser-identity": view_analyser_identity,
    "targets": targets.view_targets,
    "quality": view_quality,
    "fusion": view_fusion,
    "first-eval": view_first_eval,
    "onnx": view_onnx,
    "cli-startup": view_cli_startup,
    "long-query": view_long_query,
    "ui-latency": view_ui_latency,
    "test-lanes": view_test_lanes,
}


def render(text: str, results: Path = common.RECORD_DIR) -> str:
    """``text`` with every generated block filled from ``results`` (a block whose
    results file is missing is left as it is)."""

    def fill(match: re.Match[str]) -> str:
        kind, name = match.group(2), match.group(3)
        if kind == "results":
            path = results / f"{name}.md"
            if not path.is_file():
                return match.group(0)
            body = path.read_text().split("\n", 1)[1].strip()  # drop the "# title" line
            body = re.sub(r"^## ", "#### ", body, flags=re.M)
            body += "\n"
        else:
            if name not in VIEWS:
                msg = f"unknown view {name!r}; known: {', '.join(sorted(VIEWS))}"
                raise KeyError(msg)
            try:
                body = VIEWS[name](results)
            except FileNotFoundError:  # its benchmark has not run yet
                return match.group(0)
        return f"{match.group(1)}{body}{match.group(4)}"

    return _BLOCK.sub(fill, text)


def refresh(readme: Path = README, results: Path = common.RECORD_DIR) -> str:
    out = render(readme.read_text(), results)
    readme.write_text(out)
    return out


def main() -> int:
    for doc in DOCS:
        refresh(doc)
        print(f"refreshed {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
