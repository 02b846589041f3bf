"""File ingest: ours' loaders vs LangChain's and LlamaIndex's file readers on one generated
folder of PDFs, HTML pages and DOCX files: extraction throughput (files/s, pages/s),
embedding time shown separately, and extracted-text quality.

    python -m benchmarks.ingest_files --pdfs 10 --html 10 --docx 10 --reps 3

Systems (all in one process, one run; per rep the order rotates so that background load
hits all alike; medians are reported):

* ``ours`` — ``remy_retriever.loaders.load_file`` per file (PDF page offsets in
  ``LoadedText.pages``).
* ``langchain`` — ``PyPDFLoader`` (one document per page, ``page`` metadata),
  ``BSHTMLLoader`` and ``Docx2txtLoader`` (langchain-community), one loader per file.
* ``llamaindex`` — ``SimpleDirectoryReader(input_files=...)`` per format with its default
  readers: ``PDFReader`` (one document per page, ``page_label``), ``DocxReader``
  (docx2txt); it has no default reader for ``.html`` and reads it as text.

Extraction = files -> text (the systems' documents). Embedding = each system's documents
chunked by the same chunker (remy's, 256 MiniLM tokens) and embedded by the same loaded
all-MiniLM-L6-v2, so embedding time differs only by how much text a system produced.
``ours-ingest`` is remy's whole ``Retriever.ingest(folder)`` (read, load, chunk, embed,
write both indexes), followed by the sentence-on-page test: each PDF probe sentence is
searched and the top hit must contain it and cite its page.

Quality, from the manifest of the generated folder (``benchmarks/ingest_files_corpus.py``):
a probe is *intact* when the file's extracted text contains its words in order with
nothing between them (a line break where a line wrapped, punctuation or Markdown emphasis
do not matter; a sentence cut apart, interleaved or glued to a neighbouring word
does); a PDF probe is *paged* when it is intact inside the text the system attributes
to its page. *Boilerplate* counts the HTML snippets planted in header, nav, aside, form,
footer, style, script and noscript that reach the text, *tags* the raw HTML tags left
in it, and *headings* the HTML/DOCX headings that come out as Markdown ``#`` lines (what
a heading-aware chunker needs).
"""

from __future__ import annotations

import argparse
import itertools
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.ingest_files_corpus import FileSpec, make_corpus

FORMATS = ("pdf", "html", "docx")
SYSTEMS = ("ours", "langchain", "llamaindex")
PEER_MODULES = {
    "langchain": ("langchain_community", "pypdf", "bs4", "docx2txt"),
    "llamaindex": ("llama_index.core", "llama_index.readers.file", "pypdf", "docx2txt"),
}
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+)$", re.M)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?>")


@dataclass
class Extracted:
    """One file as one system extracted it."""

    text: str  # all of the file's text
    pages: list[str] | None  # PDFs: the text attributed to each page (index 0 = page 1)
    documents: list[tuple[str, str | None]]  # what the system hands on: (text, title)


def _norm(text: str) -> str:
    """The text's words, one space apart, padded: ``_norm(probe) in _norm(text)`` holds
    when the probe's words appear in order with nothing between them. Line breaks,
    punctuation and Markdown emphasis (ours' ``*...*``) do not matter; a sentence cut
    apart, interleaved with other text or glued to a neighbouring word does."""
    return " " + " ".join(_WORD.findall(text)) + " "


# -- extractors ------------------------------------------------------------------------------


def _ours(folder: Path, specs: Sequence[FileSpec]) -> dict[str, Extracted]:
    from remy_retriever.loaders import load_file

    out: dict[str, Extracted] = {}
    for spec in specs:
        lt = load_file(folder / spec.name)
        pages = None
        if lt.pages is not None:
            bounds = [*lt.pages, len(lt.text)]
            pages = [lt.text[a:b] for a, b in itertools.pairwise(bounds)]
        out[spec.name] = Extracted(lt.text, pages, [(lt.text, lt.title)])
    return out


def _by_page(docs: Sequence[tuple[int, str]]) -> list[str]:
    pages = [""] * (max((p for p, _ in docs), default=0) + 1)
    for page, text in docs:
        pages[page] += text
    return pages


def _langchain(folder: Path, specs: Sequence[FileSpec]) -> dict[str, Extracted]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-community's sunset notice
        from langchain_community.document_loaders import (
            BSHTMLLoader,
            Docx2txtLoader,
            PyPDFLoader,
        )

    out: dict[str, Extracted] = {}
    for spec in specs:
        path = str(folder / spec.name)
        loader: Any
        if spec.format == "pdf":
            loader = PyPDFLoader(path)
        elif spec.format == "html":
            loader = BSHTMLLoader(path, open_encoding="utf-8")
        else:
            loader = Docx2txtLoader(path)
        docs = loader.load()
        pages = None
        if spec.format == "pdf":
            pages = _by_page([(int(d.metadata["page"]), d.page_content) for d in docs])
        out[spec.name] = Extracted(
            "\n".join(d.page_content for d in docs),
            pages,
            [(d.page_content, d.metadata.get("title") or None) for d in docs],
        )
    return out


def _llamaindex(folder: Path, specs: Sequence[FileSpec]) -> dict[str, Extracted]:
    from llama_index.core import SimpleDirectoryReader

    paths = {str((folder / s.name).resolve()): s for s in specs}
    docs = SimpleDirectoryReader(input_files=list(paths)).load_data(show_progress=False)
    grouped: dict[str, list[Any]] = {name: [] for name in paths}
    for d in docs:
        grouped[str(Path(d.metadata["file_path"]).resolve())].append(d)
    out: dict[str, Extracted] = {}
    for path, spec in paths.items():
        mine = grouped[path]
        pages = None
        if spec.format == "pdf":
            pages = _by_page([(int(d.metadata["page_label"]) - 1, d.text) for d in mine])
        out[spec.name] = Extracted(
            "\n".join(d.text for d in mine), pages, [(d.text, None) for d in mine]
        )
    return out


EXTRACTORS: dict[str, Callable[[Path, Sequence[FileSpec]], dict[str, Extracted]]] = {
    "ours": _ours,
    "langchain": _langchain,
    "llamaindex": _llamaindex,
}


# -- quality ---------------------------------------------------------------------------------


def quality(specs: Sequence[FileSpec], got: dict[str, Extracted]) -> dict[str, Any]:
    """Probe and boilerplate scores of one system on one format."""
    probes = intact = paged = pdf_probes = 0
    leaked: dict[str, int] = {}
    leaked_words = planted_words = tags = chars = 0
    by_where: dict[str, list[int]] = {}
    headings = headings_marked = 0
    for spec in specs:
        ex = got[spec.name]
        marked = {_norm(m) for m in _HEADING.findall(ex.text)}
        headings += len(spec.headings)
        headings_marked += sum(_norm(h) in marked for h in spec.headings)
        text = _norm(ex.text)
        chars += len(ex.text)
        tags += len(_TAG.findall(ex.text))
        for probe in spec.probes:
            ok = _norm(probe.text) in text
            probes += 1
            intact += ok
            by_where.setdefault(probe.where, [0, 0])
            by_where[probe.where][0] += ok
            by_where[probe.where][1] += 1
            if probe.page is not None:
                pdf_probes += 1
                pages = ex.pages or []
                on_page = probe.page <= len(pages) and _norm(probe.text) in _norm(
                    pages[probe.page - 1]
                )
                paged += on_page
        # Tags are counted above; here only whether the words reach the text.
        squashed = "".join(_TAG.sub("", ex.text).split())
        for where, snippet in spec.boilerplate.items():
            words = len(snippet.split())
            planted_words += words
            if "".join(snippet.split()) in squashed:
                leaked[where] = leaked.get(where, 0) + 1
                leaked_words += words
    out: dict[str, Any] = {
        "files": len(specs),
        "probes": probes,
        "probes_intact": intact,
        "intact_pct": round(100 * intact / probes, 1) if probes else None,
        "intact_by_where": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_where.items())},
        "chars": chars,
        "html_tags_in_text": tags,
    }
    if pdf_probes:
        out["probes_paged"] = paged
        out["paged_pct"] = round(100 * paged / pdf_probes, 1)
    if headings:
        out["headings"] = headings
        out["headings_as_markdown"] = headings_marked
        out["headings_pct"] = round(100 * headings_marked / headings, 1)
    if planted_words:
        out["boilerplate_leaked_by_kind"] = leaked
        out["boilerplate_words_leaked"] = leaked_words
        out["boilerplate_words_planted"] = planted_words
        out["boilerplate_leaked_pct"] = round(100 * leaked_words / planted_words, 1)
    return out


# -- embedding -------------------------------------------------------------------------------


def _embed(embedder: Any, got: dict[str, Extracted]) -> dict[str, Any]:
    from remy_retriever.text.chunking import chunk_text

    t0 = time.perf_counter()
    texts = [
        c.display_text
        for name, ex in sorted(got.items())
        for i, (text, title) in enumerate(ex.documents)
        if text.strip()
        for c in chunk_text(
            f"{name}:{i}",
            text,
            title=title,
            max_tokens=embedder.max_tokens,
            count_tokens=embedder.count_tokens,
        )
    ]
    chunk_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder.embed_documents(texts)
    embed_s = time.perf_counter() - t0
    return {
        "chunks": len(texts),
        "chunk_s": round(chunk_s, 3),
        "embed_s": round(embed_s, 2),
        "chunks_per_s": round(len(texts) / embed_s, 1) if embed_s else None,
    }


def _ours_ingest(folder: Path, specs: Sequence[FileSpec], embedder: Any) -> dict[str, Any]:
    """``Retriever.ingest(folder)`` end to end, then the sentence-on-page test. Where folder
    ingest does not read these formats yet, ``load_file`` + ``Retriever.add`` instead
    (labelled ``"path"`` in the result)."""
    import dataclasses

    from remy_retriever import Document, Retriever
    from remy_retriever.loaders import load_file

    has_pages = "pages" in {f.name for f in dataclasses.fields(Document)}
    with tempfile.TemporaryDirectory(prefix="remy-bench-files-") as tmp:
        r = Retriever(Path(tmp) / "store", collection="files", embedder=embedder, progress=False)
        path = "Retriever.ingest(folder)"
        t0 = time.perf_counter()
        report = r.ingest(folder, progress=False)
        if len(report.added) < len(specs):
            path = "load_file + Retriever.add (folder ingest skipped these formats)"
            docs = []
            for spec in specs:
                lt = load_file(folder / spec.name)
                extra = {"pages": lt.pages} if has_pages else {}
                docs.append(
                    Document(spec.name, lt.text, title=lt.title, url=lt.url, type=lt.type, **extra)
                )
            t0 = time.perf_counter()
            report = r.add(docs, progress=False)
        ingest_s = time.perf_counter() - t0
        found = cited = total = 0
        misses: list[str] = []
        for spec in specs:
            for probe in spec.probes:
                if probe.page is None:
                    continue
                total += 1
                hits = r.search(probe.text, k=1)
                hit = hits[0] if hits else None
                ok_text = hit is not None and _norm(probe.text) in _norm(hit.text)
                page = getattr(hit.citation, "page", None) if hit else None
                end = getattr(hit.citation, "page_end", None) if hit else None
                ok_page = page is not None and page <= probe.page <= (end or page)
                found += ok_text
                cited += ok_text and ok_page
                if not (ok_text and ok_page) and len(misses) < 5:
                    misses.append(f"{spec.name} p{probe.page}: hit page {page}-{end}")
        r.close()
    pages = sum(s.pages for s in specs)
    return {
        "path": path,
        "citations_have_pages": has_pages,
        "files_added": len(report.added),
        "files_skipped": len(report.skipped),
        "files_failed": len(report.failed),
        "chunks_written": report.chunks_written,
        "ingest_s": round(ingest_s, 2),
        "files_per_s": round(len(specs) / ingest_s, 2),
        "pages_per_s": round(pages / ingest_s, 2),
        "pdf_probes": total,
        "top_hit_has_probe": found,
        "top_hit_has_probe_and_page": cited,
        "page_test_pct": round(100 * cited / total, 1) if total and has_pages else None,
        "misses": misses,
    }


# -- run -------------------------------------------------------------------------------------


def available_systems(wanted: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    chosen, missing = [], {}
    for name in wanted:
        mods = PEER_MODULES.get(name, ())
        if common.has_module(*mods):
            chosen.append(name)
        else:
            missing[name] = "not installed: " + ", ".join(
                m for m in mods if not common.has_module(m)
            )
    return chosen, missing


def run(args: argparse.Namespace) -> dict[str, Any]:
    systems, missing = available_systems(args.systems)
    work = Path(tempfile.mkdtemp(prefix="remy-bench-files-"))
    try:
        folder = work / "docs"
        t0 = time.perf_counter()
        specs = make_corpus(
            folder, pdfs=args.pdfs, html=args.html, docx=args.docx, pages=args.pages
        )
        print(f"[files] corpus: {len(specs)} files in {time.perf_counter() - t0:.1f} s", flush=True)
        groups = {f: [s for s in specs if s.format == f] for f in FORMATS}
        groups = {f: g for f, g in groups.items() if g}
        for system in systems:  # warm-up: imports and lazy set-up, untimed
            for g in groups.values():
                EXTRACTORS[system](folder, g[:1])
        times: dict[str, dict[str, list[float]]] = {s: {f: [] for f in groups} for s in systems}
        last: dict[str, dict[str, Extracted]] = {s: {} for s in systems}
        for rep in range(args.reps):
            order = systems[rep % len(systems) :] + systems[: rep % len(systems)]
            for fmt, group in groups.items():
                for system in order:
                    t0 = time.perf_counter()
                    got = EXTRACTORS[system](folder, group)
                    times[system][fmt].append(time.perf_counter() - t0)
                    last[system].update(got)
            print(f"[files] extraction rep {rep + 1}/{args.reps} done", flush=True)
        result: dict[str, Any] = {
            "corpus": {
                "files": {f: len(g) for f, g in groups.items()},
                "pdf_pages": sum(s.pages for s in groups.get("pdf", [])),
                "pages_per_pdf": args.pages,
                "probes": sum(len(s.probes) for s in specs),
                "seed": 13,
            },
            "reps": args.reps,
            "systems_missing": missing,
            "systems": {},
        }
        for system in systems:
            result["systems"][system] = _system_result(system, groups, times, last)
        if args.embed:
            from remy_retriever import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder()
            embedder.embed_documents(["warm-up"] * 8)
            for system in systems:
                emb = _embed(embedder, last[system])
                result["systems"][system]["embedding"] = emb
                print(f"[files] {system}: embedded {emb['chunks']} chunks", flush=True)
            if "ours" in systems:
                result["ours_ingest"] = _ours_ingest(folder, specs, embedder)
                print(f"[files] ours-ingest: {result['ours_ingest']['ingest_s']} s", flush=True)
        import torch

        result["torch_threads"] = torch.get_num_threads()
        result["extra_versions"] = _extra_versions()
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _system_result(
    system: str,
    groups: dict[str, list[FileSpec]],
    times: dict[str, dict[str, list[float]]],
    last: dict[str, dict[str, Extracted]],
) -> dict[str, Any]:
    per_format: dict[str, Any] = {}
    for fmt, group in groups.items():
        med = statistics.median(times[system][fmt])
        pages = sum(s.pages for s in group)
        per_format[fmt] = {
            "extract_s": [round(x, 3) for x in times[system][fmt]],
            "extract_median_s": round(med, 3),
            "files_per_s": round(len(group) / med, 1),
            "pages_per_s": round(pages / med, 1),
            "quality": quality(group, last[system]),
        }
    total = sum(p["extract_median_s"] for p in per_format.values())
    files = sum(len(g) for g in groups.values())
    pages = sum(s.pages for g in groups.values() for s in g)
    return {
        "formats": per_format,
        "extract_total_s": round(total, 3),
        "files_per_s": round(files / total, 1),
        "pages_per_s": round(pages / total, 1),
        "quality": quality([s for g in groups.values() for s in g], last[system]),
    }


def _extra_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in (
        "pypdf",
        "pdfplumber",
        "python-docx",
        "markdownify",
        "trafilatura",
        "beautifulsoup4",
        "lxml",
        "docx2txt",
        "llama-index-readers-file",
        "fpdf2",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


# -- output ----------------------------------------------------------------------------------


def _pct(q: dict[str, Any], key: str) -> str | None:
    n = {"intact_pct": "probes_intact", "paged_pct": "probes_paged"}[key]
    if key not in q:
        return None
    total = q["probes"] if key == "intact_pct" else None
    if total is None:
        return f"{q[key]:.0f}% ({q[n]})"
    return f"{q[key]:.0f}% ({q[n]}/{total})"


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    c = r["corpus"]
    files = ", ".join(f"{n} {f.upper()}" for f, n in c["files"].items())
    parts = [common.header_md("File ingest: ours vs LangChain and LlamaIndex loaders", data)]
    parts.append(
        f"Generated folder: {files} ({c['pdf_pages']} PDF pages, {c['pages_per_pdf']} per "
        f"PDF incl. a two-column page and a page without text; {c['probes']} probe "
        f"sentences). Extraction: median of {r['reps']} reps, systems in rotating order. "
        "Pages/s counts PDF pages, plus one page per HTML or DOCX file.\n"
    )
    if r["systems_missing"]:
        parts.append(f"Not run: {r['systems_missing']}.\n")
    rows = []
    for name, s in r["systems"].items():
        for fmt, p in s["formats"].items():
            q = p["quality"]
            rows.append(
                [
                    name,
                    fmt,
                    p["extract_median_s"],
                    p["files_per_s"],
                    p["pages_per_s"] if fmt == "pdf" else None,
                    _pct(q, "intact_pct"),
                    _pct(q, "paged_pct"),
                    q.get("boilerplate_leaked_pct"),
                    q["html_tags_in_text"] if fmt == "html" else None,
                    q.get("headings_pct"),
                ]
            )
        q = s["quality"]
        rows.append(
            [
                f"**{name}**",
                "**all**",
                s["extract_total_s"],
                s["files_per_s"],
                s["pages_per_s"],
                _pct(q, "intact_pct"),
                _pct(q, "paged_pct"),
                q.get("boilerplate_leaked_pct"),
                q["html_tags_in_text"],
                q.get("headings_pct"),
            ]
        )
    parts.append("### Extraction and text quality\n")
    parts.append(
        common.md_table(
            [
                "system",
                "format",
                "extract s",
                "files/s",
                "pages/s",
                "probes intact",
                "PDF probes on right page",
                "boilerplate words leaked %",
                "HTML tags in text",
                "headings as `#` lines %",
            ],
            rows,
        )
    )
    where_rows = []
    for name, s in r["systems"].items():
        where_rows.append([name, *(f"{k} {v}" for k, v in s["quality"]["intact_by_where"].items())])
    width = max(len(w) for w in where_rows)
    parts.append("\nProbes intact by placement:\n")
    parts.append(
        common.md_table(
            ["system", *[""] * (width - 1)], [w + [""] * (width - len(w)) for w in where_rows]
        )
    )
    leaks = [
        [name, s["formats"]["html"]["quality"].get("boilerplate_leaked_by_kind") or "none"]
        for name, s in r["systems"].items()
        if "html" in s["formats"]
    ]
    if leaks:
        parts.append("\nHTML boilerplate snippets leaked (files, by where they were planted):\n")
        parts.append(common.md_table(["system", "leaked"], leaks))
    emb = [
        [
            name,
            s["extract_total_s"],
            s["embedding"]["chunks"],
            s["embedding"]["chunk_s"],
            s["embedding"]["embed_s"],
            round(s["extract_total_s"] + s["embedding"]["chunk_s"] + s["embedding"]["embed_s"], 2),
        ]
        for name, s in r["systems"].items()
        if "embedding" in s
    ]
    if emb:
        parts.append(
            "\n### Extraction vs embedding\n\nSame chunker (remy's, 256 MiniLM tokens) and "
            f"the same loaded all-MiniLM-L6-v2 for every system ({r['torch_threads']} torch "
            "threads), on each system's own extracted documents.\n"
        )
        parts.append(
            common.md_table(
                [
                    "system",
                    "extract s",
                    "chunks",
                    "chunk s",
                    "embed s",
                    "all three s",
                ],
                emb,
            )
        )
    oi = r.get("ours_ingest")
    if oi:
        parts.append(
            f"\n### ours-ingest: `{oi.get('path', 'Retriever.ingest(folder)')}`, end to end\n\n"
            f"{oi['files_added']} files added ({oi['files_skipped']} skipped, "
            f"{oi['files_failed']} failed), {oi['chunks_written']} chunks, "
            f"{oi['ingest_s']} s including embedding: {oi['files_per_s']} files/s, "
            f"{oi['pages_per_s']} pages/s. "
            f"The top hybrid hit for each PDF probe contains it in "
            f"{oi['top_hit_has_probe']}/{oi['pdf_probes']}; "
            + (
                f"and cites its page (sentence-on-page test) in "
                f"{oi['top_hit_has_probe_and_page']}/{oi['pdf_probes']} ({oi['page_test_pct']}%).\n"
                if oi.get("citations_have_pages", True)
                else "page citations not measured: documents carry no pages in this build.\n"
            )
        )
        if oi["misses"] and oi.get("citations_have_pages", True):
            parts.append("First misses: " + "; ".join(oi["misses"]) + "\n")
    return "\n".join(parts)


def plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    r = data["result"]
    names = list(r["systems"])
    fmts = list(r["corpus"]["files"])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        s = r["systems"][name]["formats"]
        xs = [j + i * width for j in range(len(fmts))]
        a1.bar(xs, [s[f]["files_per_s"] for f in fmts], width, label=name)
        a2.bar(xs, [s[f]["quality"]["intact_pct"] or 0 for f in fmts], width, label=name)
    for ax, title in ((a1, "extraction, files/s"), (a2, "probe sentences intact, %")):
        ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(fmts))])
        ax.set_xticklabels(fmts)
        ax.set_title(title, fontsize=10)
    a1.set_yscale("log")
    a2.set_ylim(0, 105)
    a2.legend(fontsize=8)
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--pdfs", type=int, default=10)
    p.add_argument("--html", type=int, default=10)
    p.add_argument("--docx", type=int, default=10)
    p.add_argument("--pages", type=int, default=6, help="pages per PDF (at least 5)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument(
        "--no-embed", dest="embed", action="store_false", help="extraction and quality only"
    )
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="ingest-files")
    args = p.parse_args(argv)
    return common.run_and_publish(args, "ingest_files", run, markdown, plot)


if __name__ == "__main__":
    sys.exit(main())
