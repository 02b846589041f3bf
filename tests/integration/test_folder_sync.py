"""Folder ingest that behaves like a sync (issue 13): roots, files gone from disk and
prune, ids claimed by another root or by add(), id_prefix, strict, and the CLI flags.
Real embedded Chroma and tantivy, with the deterministic token-hash embedder (the CLI
tests use the real default model)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import Document, InvalidDocumentError, InvalidInputError, Retriever
from remy_retriever.cli import main

RELIABILITY = Path(__file__).resolve().parent / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import MODES, TokenHashEmbedder  # noqa: E402

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Retriever]:
    r = Retriever(tmp_path / "db", collection="sync", embedder=TokenHashEmbedder())
    yield r
    r.close()


def _folder(path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    return path


def _found(r: Retriever, word: str) -> dict[str, set[str]]:
    """Per search mode, the document ids of the hits whose text holds ``word``."""
    return {
        mode: {h.citation.document_id for h in r.search(word, mode=mode, k=20) if word in h.text}
        for mode in MODES
    }


def test_prune_removes_gone_files_from_every_index_and_keeps_other_roots(
    store: Retriever, tmp_path: Path
) -> None:
    docs = _folder(
        tmp_path / "docs",
        {"keep.md": "# Keep\n\nwombatcrest stays", "drop.md": "# Drop\n\nquillfeather leaves"},
    )
    other = _folder(tmp_path / "other", {"note.md": "# Note\n\nmarlinspike elsewhere"})
    store.ingest(docs)
    store.ingest(other, id_prefix="other/")
    store.add([Document(id="manual", text="# Manual\n\nbrindlefox by hand")])
    chunks_before = store.count()
    assert _found(store, "quillfeather") == {m: {"drop.md"} for m in MODES}

    (docs / "drop.md").unlink()
    report = store.ingest(docs)  # without prune: reported, kept
    assert report.gone == ("drop.md",) and not report.pruned
    assert report.unchanged == ("keep.md",)
    assert _found(store, "quillfeather") == {m: {"drop.md"} for m in MODES}

    report = store.ingest(docs, prune=True)
    assert report.gone == ("drop.md",) and report.pruned and report.chunks_deleted == 1
    assert _found(store, "quillfeather") == {m: set() for m in MODES}
    assert store.count() == chunks_before - 1
    assert store.document_ids() == ["keep.md", "manual", "other/note.md"]
    for word, doc_id in (("marlinspike", "other/note.md"), ("brindlefox", "manual")):
        assert _found(store, word) == {m: {doc_id} for m in MODES}
    assert store.ingest(docs, prune=True).gone == ()


def test_gone_ignores_files_still_on_disk_but_unusable(store: Retriever, tmp_path: Path) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta"})
    store.ingest(docs)
    (docs / "b.md").write_bytes(b"\xff\xfe not utf-8 \xff")
    report = store.ingest(docs, prune=True)
    assert report.gone == () and "b.md" in store.document_ids()
    assert [Path(i.path).name for i in report.failed] == ["b.md"]


def test_same_id_from_another_root_or_add_is_refused(store: Retriever, tmp_path: Path) -> None:
    one = _folder(tmp_path / "one", {"README.md": "# One\n\nfirst readme"})
    two = _folder(tmp_path / "two", {"README.md": "# Two\n\nsecond readme"})
    store.ingest(one)
    with pytest.raises(InvalidDocumentError) as info:
        store.ingest(two)
    message = str(info.value)
    assert str(one / "README.md") in message and str(two / "README.md") in message
    assert "id_prefix" in message and "--id-prefix" in message
    assert store.get_documents(["README.md"])["README.md"].document.text.endswith("first readme")

    store.add([Document(id="guide.md", text="# Guide\n\nadded by hand")])
    three = _folder(tmp_path / "three", {"guide.md": "# Guide\n\nfrom the folder"})
    with pytest.raises(InvalidDocumentError, match="added with add"):
        store.ingest(three)
    # Both folders in one call: refused naming both files, nothing stored.
    with pytest.raises(InvalidDocumentError) as info:
        store.ingest([tmp_path / "one", two], id_prefix="x/")
    assert "README.md" in str(info.value) and "nothing was stored" in str(info.value)
    assert store.document_ids() == ["README.md", "guide.md"]

    report = store.ingest(two, id_prefix="two/")
    assert report.added == ("two/README.md",)
    assert store.document_ids() == ["README.md", "guide.md", "two/README.md"]


def test_id_prefix_prefixes_every_id_and_is_checked(store: Retriever, tmp_path: Path) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "alpha", "sub/b.md": "beta"})
    report = store.ingest(docs, id_prefix="docs/")
    assert sorted(report.added) == ["docs/a.md", "docs/sub/b.md"]
    for bad in ("a#b", "", 3, "x\n"):
        with pytest.raises(InvalidInputError, match="id_prefix"):
            store.ingest(docs, id_prefix=bad)  # type: ignore[arg-type]


def test_strict_stops_at_the_first_bad_file_and_stores_nothing(
    store: Retriever, tmp_path: Path
) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "alpha", "c.md": "gamma", "tool.py": "x = 1"})
    (docs / "b.md").write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidDocumentError) as info:
        store.ingest(docs, strict=True)
    assert "b.md" in str(info.value) and "strict" in str(info.value)
    assert store.count() == 0
    (docs / "b.md").write_text("beta")  # an unsupported .py alone does not stop strict
    report = store.ingest(docs, strict=True)
    assert sorted(report.added) == ["a.md", "b.md", "c.md"]
    assert [Path(i.path).name for i in report.skipped] == ["tool.py"]


def test_a_single_file_records_its_folder(store: Retriever, tmp_path: Path) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "alpha", "b.md": "beta"})
    store.ingest(docs / "a.md")
    report = store.ingest(docs)  # the same root: a.md is this folder's own
    assert report.added == ("b.md",) and report.unchanged == ("a.md",)


def test_cli_ingest_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta"})
    db = str(tmp_path / "db")
    base = ["--db", db, "--no-progress"]
    assert main(["ingest", str(docs), *base, "--id-prefix", "d/", "--metadata", '{"t": 1}']) == 0
    assert "added 2, updated 0, unchanged 0 documents" in capsys.readouterr().out
    (docs / "b.md").unlink()
    assert main(["ingest", str(docs), *base, "--id-prefix", "d/"]) == 0
    out = capsys.readouterr().out
    assert "gone from disk: 1 document(s), kept; --prune deletes them" in out
    assert main(["ingest", str(docs), *base, "--id-prefix", "d/", "--prune"]) == 0
    assert "gone from disk: 1 document(s), deleted (--prune)" in capsys.readouterr().out
    with Retriever(db, collection="docs") as r:
        assert r.document_ids() == ["d/a.md"]
    (docs / "c.md").write_bytes(b"\xff")
    assert main(["ingest", str(docs), *base, "--id-prefix", "d/", "--strict"]) == 1
    assert "strict" in capsys.readouterr().err
    assert main(["ingest", str(docs), *base, "--id-prefix", "a#b"]) == 2
    assert main(["ingest", str(tmp_path / "missing"), "--db", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


def test_readme_metadata_then_where_pair(
    tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's pair, run as written (only the paths differ)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert 'remy ingest examples/corpus --db ./remy_data --metadata \'{"tenant": "a"}\'' in readme
    assert 'remy search "install on linux" --db ./remy_data --where \'{"tenant": "a"}\'' in readme
    db = str(tmp_path / "remy_data")
    assert main(["ingest", str(corpus_dir), "--db", db, "--metadata", '{"tenant": "a"}']) == 0
    capsys.readouterr()
    assert main(["search", "install on linux", "--db", db, "--where", '{"tenant": "a"}']) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] score=") and "install.md" in out
    args = ["search", "install on linux", "--db", db, "--where", '{"tenant": "a"}', "--json"]
    assert main(args) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and all(h["metadata"] == {"tenant": "a"} for h in hits)
    assert any(h["citation"]["documentId"] == "install.md" for h in hits)
    args[args.index('{"tenant": "a"}')] = '{"tenant": "b"}'
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_eval_shows_progress_with_time_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = [{"_id": f"d{i}", "title": f"T{i}", "text": f"penguins breed {i}"} for i in range(3)]
    (beir / "corpus.jsonl").write_text("\n".join(map(json.dumps, corpus)) + "\n")
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "where do penguins breed"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    args = ["eval", str(beir), "--mode", "lexical", "--cache", str(tmp_path / "c"), "--progress"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "embedding 3 documents once" in err
    assert "ingest: 100%" in err and "lexical: 100%" in err and "<00:00" in err  # ETA
    assert main(args) == 0  # cached: nothing to embed, no note
    assert "embedding" not in capsys.readouterr().err


def test_a_mixed_folder_ingests_everything_supported_and_reports_the_rest(
    store: Retriever, tmp_path: Path
) -> None:
    """Needs the loaders (helper L's package) and their extras."""
    from docx import Document as DocxDocument
    from fpdf import FPDF

    root = _folder(
        tmp_path / "mixed",
        {
            "guide.md": "# Guide\n\nnarwhalgrove in markdown",
            "page.html": "<html><head><title>Page</title><script>var leaked = 1;</script>"
            "</head><body><nav>menu</nav><h1>Page</h1><p>okapiridge in html</p></body></html>",
            "a/README.md": "# A\n\nfirst readme",
            "b/README.md": "# B\n\nsecond readme",
            "tool.py": "print('python')",
        },
    )
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="tapirstone in a pdf")
    pdf.output(str(root / "paper.pdf"))
    docx = DocxDocument()
    docx.add_heading("Report", level=1)
    docx.add_paragraph("ibexmeadow in a docx")
    docx.save(str(root / "report.docx"))
    (root / "blob.bin").write_bytes(bytes(range(256)))
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "outside.md").write_text("secret outside")
    (root / "escape.md").symlink_to(tmp_path / "outside.md")

    report = store.ingest(root)
    assert sorted(report.added) == [
        "a/README.md",
        "b/README.md",
        "guide.md",
        "page.html",
        "paper.pdf",
        "report.docx",
    ]
    reasons = {Path(i.path).name: i.reason for i in report.skipped}
    assert set(reasons) == {"blob.bin", "escape.md", "tool.py"}
    assert "unsupported type" in reasons["tool.py"] and "unsupported type" in reasons["blob.bin"]
    assert "outside the folder" in reasons["escape.md"]
    assert [(Path(i.path).name, "UTF-8" in i.reason) for i in report.failed] == [
        ("latin1.txt", True)
    ]
    for word, doc_id in (
        ("tapirstone", "paper.pdf"),
        ("okapiridge", "page.html"),
        ("ibexmeadow", "report.docx"),
    ):
        assert _found(store, word) == {m: {doc_id} for m in MODES}, word
    assert _found(store, "leaked") == {m: set() for m in MODES}
    assert _found(store, "menu") == {m: set() for m in MODES}
