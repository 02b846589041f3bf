"""The loader registry, missing extras, the text loader and HTML decoding (no store)."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import InvalidDocumentError, InvalidInputError, RemyError
from remy_retriever.loaders import (
    LoadedText,
    MissingExtraError,
    load_file,
    load_text,
    loader_for,
    register_loader,
    registered_suffixes,
)
from remy_retriever.loaders import base as loaders_base
from remy_retriever.loaders.base import clean_text
from remy_retriever.loaders.html import decode_html


@pytest.fixture
def registry() -> Iterator[None]:
    """Restore the registry after a test that registers loaders."""
    saved = dict(loaders_base._LOADERS)
    yield
    loaders_base._LOADERS.clear()
    loaders_base._LOADERS.update(saved)


def _epub(data: bytes, name: str) -> LoadedText:
    return LoadedText(text=f"{name}: {len(data)} bytes", type="epub")


def test_built_in_suffixes() -> None:
    assert set(registered_suffixes()) >= {
        ".pdf",
        ".html",
        ".htm",
        ".docx",
        ".md",
        ".markdown",
        ".txt",
        ".rst",
    }
    assert loader_for("a/b/Report.PDF") is loader_for("x.pdf") is not None
    assert loader_for("script.py") is None
    assert loader_for(Path("README")) is None


def test_register_loader_adds_a_suffix(registry: None, tmp_path: Path) -> None:
    register_loader(".epub", _epub)
    assert loader_for("book.EPUB") is _epub
    path = tmp_path / "book.epub"
    path.write_bytes(b"12345")
    assert load_file(path) == LoadedText(text="book.epub: 5 bytes", type="epub")


def test_register_loader_refuses_to_replace_silently(registry: None) -> None:
    builtin = loader_for("x.pdf")
    with pytest.raises(InvalidInputError, match=r"'\.pdf' already has a loader.*replace=True"):
        register_loader(".pdf", _epub)
    assert loader_for("x.pdf") is builtin
    register_loader(".epub", _epub)
    with pytest.raises(InvalidInputError, match="replace=True"):
        register_loader(".EPUB", _epub)
    register_loader(".pdf", _epub, replace=True)
    assert loader_for("x.pdf") is _epub


@pytest.mark.parametrize(
    "suffix",
    ["epub", "", ".", "..epub", ".tar.gz", ".a/b", ". x", ".x\x00", 7, None, "." + "a" * 40],
)
def test_register_loader_validates_the_suffix(registry: None, suffix: object) -> None:
    before = registered_suffixes()
    with pytest.raises(InvalidInputError, match="suffix must be a dot"):
        register_loader(suffix, _epub)  # type: ignore[arg-type]
    assert registered_suffixes() == before


def test_register_loader_needs_a_function(registry: None) -> None:
    with pytest.raises(InvalidInputError, match="loader must be a function"):
        register_loader(".epub", "not callable")  # type: ignore[arg-type]
    assert loader_for("a.epub") is None


def test_load_file_unsupported_missing_and_bad_paths(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("print(1)")
    with pytest.raises(InvalidDocumentError, match=r"unsupported type '\.py'.*register_loader"):
        load_file(tmp_path / "x.py")
    with pytest.raises(InvalidDocumentError, match="No such file"):
        load_file(tmp_path / "gone.md")
    with pytest.raises(InvalidInputError, match="load_file"):
        load_file(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "suffix", "extra"),
    [("pypdf", ".pdf", "pdf"), ("bs4", ".html", "html"), ("markdownify", ".htm", "html"),
     ("docx", ".docx", "docx")],
)  # fmt: skip
def test_a_missing_extra_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, suffix: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import of it now fails
    loader = loader_for(f"file{suffix}")
    assert loader is not None
    with pytest.raises(MissingExtraError) as caught:
        loader(b"irrelevant", f"file{suffix}")
    message = str(caught.value)
    assert f"needs the '{extra}' extra: pip install 'remy-retriever[{extra}]'" in message
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, RemyError)


def test_text_loader() -> None:
    loaded = load_text(
        codecs.BOM_UTF8 + b"intro\n```\n# not a title\n```\n# Real  Title #\n", "a.md"
    )
    assert loaded == LoadedText(
        text="intro\n```\n# not a title\n```\n# Real  Title #\n", title="Real  Title", type="md"
    )
    assert load_text(b"x", "n.markdown").type == "md"
    assert load_text(b"x", "n.TXT") == LoadedText(text="x", type="txt")
    assert load_text(b"Title\n=====\n", "n.rst").type == "rst"


def test_text_loader_refuses_binary_and_non_utf8() -> None:
    with pytest.raises(InvalidDocumentError, match=r"'blob\.txt'.*NUL bytes \(binary\?\)"):
        load_text(b"abc\x00def", "blob.txt")
    with pytest.raises(InvalidDocumentError, match=r"'latin\.md'.*not UTF-8 text.*byte 1"):
        load_text(b"a\xe9b", "latin.md")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (codecs.BOM_UTF8 + "é".encode(), "é"),
        (codecs.BOM_UTF16_LE + "<p>é</p>".encode("utf-16-le"), "<p>é</p>"),
        (codecs.BOM_UTF16_BE + "<p>é</p>".encode("utf-16-be"), "<p>é</p>"),
        ('<meta charset="windows-1251">Ж'.encode("cp1251"), '<meta charset="windows-1251">Ж'),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">\x93q\x94',
            '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">\u201cq\u201d',
        ),
        ('<meta charset="no-such-codec">é'.encode(), '<meta charset="no-such-codec">é'),
        ("naïve".encode(), "naïve"),
        (b"caf\xe9", "café"),  # not UTF-8, nothing declared: windows-1252
    ],
)
def test_decode_html(data: bytes, expected: str) -> None:
    assert decode_html(data, "p.html") == expected


def test_importing_the_loaders_imports_no_optional_library() -> None:
    code = (
        "import sys, remy_retriever, remy_retriever.loaders; "
        "heavy = ('pypdf', 'bs4', 'markdownify', 'docx', 'lxml', 'torch'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


#: Runs of blanks that took clean_text quadratic time (hours for 300,000 blanks).
BLANK_RUNS = [
    "a" + " " * 300_000 + "b",
    "a" + " " * 300_000,
    " \t" * 150_000 + "\n",
    "a" + " \n" * 150_000 + "b",
    ("x" + " " * 3000 + "\n\n\n") * 100,
]


def test_clean_text_is_linear_on_a_300k_space_run() -> None:
    # In a subprocess with a time budget: a backtracking regular expression holds the
    # GIL, so a thread could not even time it out.
    code = (
        "import json, sys\n"
        "from remy_retriever.loaders.base import clean_text\n"
        "print(json.dumps([clean_text(t) for t in json.loads(sys.stdin.read())]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(BLANK_RUNS),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == [_reference_clean(t) for t in BLANK_RUNS]


def _reference_clean(text: str) -> str:
    """What clean_text promises, spelled out line by line."""
    lines = [line.rstrip(" \t") for line in text.replace("\r", "\n").split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def test_clean_text_keeps_one_blank_line_and_indentation() -> None:
    assert clean_text("  a \t\r\n\r\n\n\n    b  \n\x00c\f\n") == "a\n\n    b\nc"
