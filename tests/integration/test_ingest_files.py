"""Folder ingest from disk, file by file: symbolic links, special files, unreadable files,
odd names and the size limit (issue 12), against a real embedded Chroma and tantivy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import (
    Document,
    InvalidDocumentError,
    InvalidInputError,
    Retriever,
    UnusableFileError,
)
from remy_retriever.cli import main as cli_main
from remy_retriever.ingest.files import DEFAULT_MAX_DOCUMENT_BYTES, document_id_for

RELIABILITY = Path(__file__).resolve().parent / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import MODES, TokenHashEmbedder, snapshot  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Retriever]:
    r = Retriever(tmp_path / "db", collection="files", embedder=TokenHashEmbedder())
    yield r
    r.close()


def _found(r: Retriever, word: str) -> set[str]:
    """Document ids holding ``word`` (lexical search), checked against the top hit of
    every mode (semantic search always returns its nearest chunks)."""
    found = {h.citation.document_id for h in r.search(word, mode="lexical", k=10)}
    for mode in MODES:
        top = r.search(word, mode=mode, k=1)
        assert not found or top[0].citation.document_id in found, (mode, word)
    return found


def _reasons(issues: tuple[object, ...]) -> dict[str, str]:
    return {Path(i.path).name: i.reason for i in issues}  # type: ignore[attr-defined]


@pytest.mark.timeout(120)
def test_links_leaving_the_folder_are_skipped_not_followed(
    store: Retriever, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_text("# Secret\n\nzebracorn launch codes")
    (elsewhere / "more.md").write_text("quokkaleaf private notes")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Good\n\nplatypus public guide")
    (docs / "innocent.md").symlink_to(elsewhere / "secret.md")
    (docs / "status.txt").symlink_to("/proc/self/status")
    (docs / "outdir").symlink_to(elsewhere, target_is_directory=True)
    (docs / "sub" / "up").symlink_to(docs, target_is_directory=True)  # a loop
    (docs / "sub" / "alias.md").symlink_to(docs / "good.md")  # inside: read once
    (docs / "sub" / "dangling.md").symlink_to(docs / "nothing.md")
    (docs / "parent.md").symlink_to("../elsewhere/secret.md")

    report = store.ingest(docs)

    assert report.added == ("good.md",)
    assert not report.failed
    reasons = _reasons(report.skipped)
    for name in ("innocent.md", "status.txt", "outdir", "parent.md"):
        assert "outside the folder" in reasons[name], reasons
    assert "already read" in reasons["up"]
    assert "same file as" in reasons["alias.md"]
    assert "broken symbolic link" in reasons["dangling.md"]
    assert _found(store, "zebracorn") == set()
    assert _found(store, "quokkaleaf") == set()
    assert _found(store, "voluntary_ctxt_switches") == set()
    assert _found(store, "platypus") == {"good.md"}
    assert store.document_ids() == ["good.md"]


@pytest.mark.timeout(60)
def test_special_files_and_pseudo_filesystems_are_never_read(
    store: Retriever, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("wombat notes")
    os.mkfifo(docs / "pipe.md")
    (docs / "pipe-link.md").symlink_to(docs / "pipe.md")  # a link inside to a FIFO
    baseline = snapshot(store)

    # Named directly, a FIFO would block a plain read forever (main hung here).
    with pytest.raises(InvalidDocumentError, match=r"pipe\.md.*a FIFO"):
        store.ingest(docs / "pipe.md")
    for pseudo in ("/proc", "/proc/self/status", "/sys", "/dev/null", "/dev"):
        with pytest.raises(InvalidDocumentError, match="pseudo-filesystem"):
            store.ingest(pseudo)
    assert snapshot(store) == baseline

    report = store.ingest(docs)
    assert report.added == ("good.md",)
    reasons = _reasons(report.skipped)
    assert "a FIFO, not a regular file" in reasons["pipe.md"]
    assert "a FIFO, not a regular file" in reasons["pipe-link.md"]


@pytest.mark.timeout(120)
def test_odd_file_names_get_safe_stable_ids(store: Retriever, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "C#.md").write_text("Pattern matching in csharpish code")
    (docs / "C%23.md").write_text("A file literally named with a percent escape, ocelotish")
    (docs / "100%.md").write_text("Full marks, gerbilish")
    os.makedirs(os.fsencode(docs) + b"/caf\xe9")
    with open(os.fsencode(docs) + b"/caf\xe9/na\xefve.md", "wb") as f:
        f.write(b"# Latin-1 name\n\nmarmotish text in a folder whose name is not UTF-8")

    report = store.ingest(docs)

    assert sorted(report.added) == ["100%.md", "C%23.md", "C%2523.md", "caf%E9/na%EFve.md"]
    assert not report.skipped and not report.failed
    hit = store.search("csharpish", k=1)[0]
    assert hit.citation.document_id == "C%23.md"
    assert hit.citation.path is not None and hit.citation.path.endswith("C#.md")
    assert hit.citation.title == "C#"
    hit = store.search("marmotish", k=1)[0]
    assert hit.citation.document_id == "caf%E9/na%EFve.md"
    assert hit.citation.path is not None and hit.citation.path.endswith("caf\\xe9/na\\xefve.md")
    assert _found(store, "ocelotish") == {"C%2523.md"}
    # stable: ingesting again changes nothing
    again = store.ingest(docs)
    assert not again.added and not again.updated and len(again.unchanged) == 4
    # one file named directly gets the same kind of id
    single = store.ingest(docs / "C#.md")
    assert single.unchanged == ("C%23.md",)


def test_document_ids_for_names() -> None:
    assert document_id_for("a/b.md") == "a/b.md"
    assert document_id_for("C#.md") == "C%23.md"
    assert document_id_for("C%23.md") == "C%2523.md"
    assert document_id_for("100%.md") == "100%.md"
    assert document_id_for("%zz%4") == "%zz%4"
    assert document_id_for("tab\there") == "tab%09here"
    assert document_id_for(os.fsdecode(b"caf\xe9.md")) == "caf%E9.md"
    assert document_id_for("café.md") == "café.md"


@pytest.mark.timeout(120)
def test_bad_files_fail_alone_and_the_rest_are_ingested(store: Retriever, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\naardvark text")
    (docs / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve".encode("latin-1"))
    (docs / "binary.txt").write_bytes(b"\x00\x01binary\x00")
    (docs / "script.py").write_text("print('hi')")

    report = store.ingest(docs)

    assert report.added == ("good.md",)
    failed = _reasons(report.failed)  # a file of a type remy reads, that could not be read
    assert set(failed) == {"latin1.md", "binary.txt"}
    assert "not UTF-8" in failed["latin1.md"]
    assert "NUL" in failed["binary.txt"]
    # a type without a loader is left out on purpose
    skipped = _reasons(report.skipped)
    assert list(skipped) == ["script.py"] and "unsupported type '.py'" in skipped["script.py"]
    assert _found(store, "aardvark") == {"good.md"}
    # named directly, the same file is an error naming it and the fix
    with pytest.raises(UnusableFileError, match=r"latin1\.md.*not UTF-8.*convert"):
        store.ingest(docs / "latin1.md")
    with pytest.raises(InvalidDocumentError, match=r"script\.py.*unsupported type") as info:
        store.ingest(docs / "script.py")
    assert not isinstance(info.value, UnusableFileError)


@pytest.mark.timeout(120)
def test_size_limit(tmp_path: Path) -> None:
    assert DEFAULT_MAX_DOCUMENT_BYTES == 10 * 2**20
    with Retriever(tmp_path / "d0", embedder=TokenHashEmbedder()) as r:
        assert r.max_document_bytes == DEFAULT_MAX_DOCUMENT_BYTES
    r = Retriever(tmp_path / "db", embedder=TokenHashEmbedder(), max_document_bytes=1000)
    try:
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "small.md").write_text("hedgehog " * 10)
        (docs / "big.md").write_text("capybara " * 200)  # 1,800 bytes
        report = r.ingest(docs)
        assert report.added == ("small.md",)
        reason = _reasons(report.failed)["big.md"]
        assert "1,800 bytes" in reason and "1,000" in reason and "max_document_bytes" in reason
        assert _found(r, "capybara") == set()
        with pytest.raises(UnusableFileError, match=r"big\.md.*too large"):
            r.ingest(docs / "big.md")
        baseline = snapshot(r)
        # 600 characters, 1,200 bytes of UTF-8: the limit is in bytes
        too_big = Document(id="big", text="é" * 600)
        with pytest.raises(InvalidDocumentError, match=r"'big'.*1,200 bytes.*1,000.*max_doc"):
            r.add([Document(id="ok", text="fine"), too_big])
        assert snapshot(r) == baseline
        r.add([Document(id="edge", text="é" * 500)])  # exactly at the limit
    finally:
        r.close()
    for bad in (0, -1, 1.5, "10", True):
        with pytest.raises(InvalidInputError, match="max_document_bytes"):
            Retriever(tmp_path / "db2", embedder=TokenHashEmbedder(), max_document_bytes=bad)


_CHILD = """
import json, sys
sys.path.insert(0, {reliability!r})
from remy_reliability_support import TokenHashEmbedder
from remy_retriever import Retriever, RemyError
out = {{}}
r = Retriever({db!r}, embedder=TokenHashEmbedder())
report = r.ingest({docs!r})
out["added"] = list(report.added)
out["failed"] = [[i.path, i.reason] for i in report.failed]
out["skipped"] = [[i.path, i.reason] for i in report.skipped]
try:
    r.ingest({docs!r} + "/locked.md")
except RemyError as exc:
    out["direct"] = [type(exc).__name__, str(exc)]
except Exception as exc:
    out["direct"] = ["raw " + type(exc).__name__, str(exc)]
r.close()
if {cli!r}:
    from remy_retriever.cli import main
    out["cli"] = main(["ingest", {docs!r}, "--db", {db!r} + "-cli", "--no-progress"])
print(json.dumps(out))
"""


def _without_read_override(code: str) -> dict[str, object]:
    """Run ``code`` in a process where file modes apply: root reads every file whatever
    its mode, so as root the process drops the capabilities that allow it."""
    argv = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.timeout(180)
def test_unreadable_file_fails_alone(tmp_path: Path) -> None:
    work = tmp_path / "work"
    docs = work / "docs"
    docs.mkdir(parents=True)
    (docs / "good.md").write_text("badger readable text")
    (docs / "locked.md").write_text("hidden text")
    (docs / "locked.md").chmod(0)
    (docs / "closed").mkdir()
    (docs / "closed" / "inner.md").write_text("inside a closed folder")
    (docs / "closed").chmod(0)
    code = _CHILD.format(
        reliability=str(RELIABILITY), db=str(work / "db"), docs=str(docs), cli=False
    )
    try:
        out = _without_read_override(textwrap.dedent(code))
    finally:
        (docs / "closed").chmod(0o755)
    assert out["added"] == ["good.md"]
    failed = dict(out["failed"])  # type: ignore[arg-type]
    assert "Permission denied" in failed[str(docs / "locked.md")]
    assert "cannot list this folder" in failed[str(docs / "closed")]
    name, message = out["direct"]  # type: ignore[misc]
    assert name == "UnusableFileError"
    assert "locked.md" in message and "Permission denied" in message


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_prints_skipped_files_and_keeps_going(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("narwhal secret")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nnarwhal public")
    (docs / "link.md").symlink_to(outside)
    (docs / "C#.md").write_text("sharp notes")
    (docs / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    db = str(tmp_path / "db")
    assert cli_main(["ingest", str(docs), "--db", db, "--no-progress"]) == 1  # bad.md failed
    captured = capsys.readouterr()
    assert "added 2," in captured.out
    skipped, failed = captured.err.split("failed 1 file(s):")
    assert "skipped 1 file(s)" in skipped
    assert "link.md" in skipped and "outside the folder" in skipped
    assert "bad.md" in failed and "not UTF-8" in failed
    assert cli_main(["search", "narwhal", "--db", db, "--json", "--mode", "lexical"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert {h["citation"]["documentId"] for h in hits} == {"good.md"}
    assert cli_main(["ingest", "/proc", "--db", db]) == 2
    assert "pseudo-filesystem" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_exits_1_when_a_file_could_not_be_read(tmp_path: Path) -> None:
    work = tmp_path / "work"
    docs = work / "docs"
    docs.mkdir(parents=True)
    (docs / "good.md").write_text("badger readable text")
    (docs / "locked.md").write_text("hidden text")
    (docs / "locked.md").chmod(0)
    code = _CHILD.format(
        reliability=str(RELIABILITY), db=str(work / "db"), docs=str(docs), cli=True
    )
    out = _without_read_override(textwrap.dedent(code))
    assert out["cli"] == 1
