"""The `remy` command at its boundary: what it creates (only when asked), what it prints
(escaped for the terminal, JSON exact), how it fails (`remy: error:`, exit 2, never a
traceback) and `--embedder`. Real store, real model (the default all-MiniLM-L6-v2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import chromadb
import pytest

import remy_retriever
from remy_retriever import Document, Retriever
from remy_retriever.cli import main
from remy_retriever.errors import InvalidInputError
from remy_retriever.evaluation.beir import load_beir

#: Characters that would drive a terminal (ESC, BEL, CSI, CR, a bidi override).
HOSTILE = ("\x1b", "\x07", "\x9b", "\r", "\u202e")
EVIL_TITLE = "\x1b]0;pwned\x07Evil title"
EVIL_TEXT = (
    "The quick brown fox \x1b[2J\x1b[H jumps \u202eover\u202c the lazy dog \x9b6n; "
    "a bell \x07 and a carriage\rreturn."
)
SOURCE = Path(remy_retriever.__file__).resolve().parents[1]


def _clean(text: str) -> bool:
    return not any(ch in text for ch in HOSTILE)


def _collections(db: Path) -> set[str]:
    return {c.name for c in chromadb.PersistentClient(path=str(db)).list_collections()}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding a document full of terminal escapes, plus a memory with some."""
    path = tmp_path_factory.mktemp("cli-hardening") / "db"
    with Retriever(path) as r:
        r.add(
            [
                Document(
                    id="evil\x1b[5m",
                    text=EVIL_TEXT,
                    title=EVIL_TITLE,
                    path="notes/\x1b[1mevil.md",
                    summary="a summary \x1b]52;c;Y2xpcGJvYXJk\x07 of it",
                ),
                Document(id="plain", text="A plain note about foxes and dogs."),
            ]
        )
    assert main(["memory", "add", "the fox \x1b]0;owned\x07 remembers", "--db", str(path)]) == 0
    return path


# -- terminal escapes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--explain", "--expand", "1", "--highlight", "--mode", "lexical"],
        ["--documents", "--summary", "--full-docs"],
    ],
    ids=["plain", "explain-expand-highlight", "documents"],
)
def test_search_escapes_stored_terminal_controls(
    db: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "quick brown fox", "--db", str(db), *extra]) == 0
    out = capsys.readouterr().out
    assert "Evil title" in out or "quick brown fox" in out
    assert _clean(out), repr(out)  # main: the raw ESC/OSC sequences reach the terminal
    assert "\\x1b" in out  # shown, visibly


def test_memory_output_escapes_stored_terminal_controls(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["memory", "search", "fox remembers", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "remembers" in out and "\\x1b]0;owned\\x07" in out and _clean(out), repr(out)


def test_json_output_stays_exact(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "quick brown fox", "--db", str(db), "--json", "--k", "2"]) == 0
    hits = json.loads(capsys.readouterr().out)
    evil = next(h for h in hits if h["citation"]["documentId"] == "evil\x1b[5m")
    assert "\x1b[2J\x1b[H jumps \u202eover" in evil["text"]
    assert evil["citation"]["title"] == EVIL_TITLE


def test_error_messages_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beir = _beir(
        tmp_path / "evil\x1b]0;pwned\x07dir", corpus=['{"_id": "d1", "text": "x"}', "{bad"]
    )
    assert main(["eval", str(beir), "--cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("remy: error: ") and "corpus.jsonl:2 is not valid JSON" in err
    assert _clean(err) and "\\x1b]0;pwned\\x07dir" in err


def test_usage_errors_are_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["search", "x", "--bogus\x1b]0;t\x07"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and _clean(err)


# -- reading commands create nothing --------------------------------------------------------

READERS = [
    ["search", "fox"],
    ["search", "fox", "--documents"],
    ["doctor"],
    ["memory", "search", "fox"],
    ["memory", "history", "some-id"],
    ["memory", "update", "some-id", "new content"],
    ["memory", "forget", "some-id"],
]


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_mistyped_db_creates_nothing(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "remy_dta"
    assert main([*argv, "--db", str(typo)]) == 2
    err = capsys.readouterr().err
    assert f"no remy store at '{typo}'" in err and "create=True" not in err
    assert not typo.exists()  # main: the directory (and a Chroma store in it) was created


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_mistyped_collection_names_the_ones_that_exist(
    db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = _collections(db)
    assert main([*argv, "--db", str(db), "--collection", "dcos"]) == 2
    err = capsys.readouterr().err
    assert "no collection 'dcos' in the remy store" in err, err
    assert "it has 'docs', 'memories'" in err and "create=True" not in err
    assert _collections(db) == before


def test_only_ingest_and_memory_add_create(
    tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "new"
    assert main(["memory", "add", "first memory", "--db", str(store)]) == 0
    assert _collections(store) == {"memories", "memories-remydocs"}
    assert main(["search", "memory", "--db", str(store)]) == 2
    assert "it has 'memories': pass --collection" in capsys.readouterr().err
    assert main(["ingest", str(corpus_dir / "install.md"), "--db", str(store)]) == 0
    assert "docs" in _collections(store)


# -- --embedder --------------------------------------------------------------------------------


def test_embedder_flag_on_every_store_command(
    tmp_path: Path, corpus_dir: Path, minilm_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store, model = str(tmp_path / "s"), ["--embedder", minilm_path]
    assert main(["ingest", str(corpus_dir / "install.md"), "--db", store, *model]) == 0
    capsys.readouterr()
    assert main(["search", "install on linux", "--db", store, "--json", *model]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["search", "linux", "--db", store, "--documents", *model]) == 0
    assert main(["doctor", "--db", store, *model]) == 0
    assert main(["memory", "add", "uses linux", "--db", store, *model]) == 0
    assert (
        main(["memory", "search", "linux", "--db", store, "--search-mode", "hybrid", *model]) == 0
    )
    capsys.readouterr()
    assert main(["search", "linux", "--db", store, "--embedder", str(tmp_path / "no-model")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("remy: error: ") and "no-model" in err


# -- hygiene: every failure is `remy: error:` and exit 2 ----------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "fox", "--where", "[" * 100_000 + "]" * 100_000],
        ["search", "fox", "--where", '{"a": ' * 100_000 + "1" + "}" * 100_000],
        ["search", "fox", "--documents", "--where", "[" * 100_000 + "]" * 100_000],
        ["memory", "search", "fox", "--where", "[" * 100_000 + "]" * 100_000],
        ["memory", "add", "fox", "--metadata", "[" * 100_000 + "]" * 100_000],
    ],
    ids=["search", "search-object", "documents", "memory-search", "memory-metadata"],
)
def test_deeply_nested_json_flags_are_errors(
    db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--db", str(db)]) == 2  # main: RecursionError with a traceback
    err = capsys.readouterr().err
    assert err.startswith("remy: error: --") and "nests too deeply" in err
    assert len(err) < 1000


def test_an_unexpected_exception_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from remy_retriever.cli import doctor

    def broken(args: object) -> int:
        msg = "boom \x1b]0;t\x07"
        raise RuntimeError(msg)

    monkeypatch.setattr(doctor, "run", broken)
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("remy: error: unexpected RuntimeError: boom \\x1b]0;t\\x07")
    assert "Traceback" not in err


def test_a_closed_pipe_is_quiet(db: Path) -> None:
    """`remy search ... | head -0`: the reader is gone before remy prints."""
    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    argv = [sys.executable, "-m", "remy_retriever.cli", "search", "fox", "--db", str(db)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    assert proc.wait(timeout=300) == 2  # main: 1, with a BrokenPipeError traceback
    assert "Traceback" not in err and "BrokenPipe" not in err, err


# -- remy eval: malformed BEIR files --------------------------------------------------------------


def _beir(
    root: Path,
    *,
    corpus: list[str] | None = None,
    queries: list[str] | None = None,
    qrels: str = "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
) -> Path:
    (root / "qrels").mkdir(parents=True)
    rows = corpus or ['{"_id": "d1", "title": "Penguins", "text": "Penguins breed in winter."}']
    (root / "corpus.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    asked = queries or ['{"_id": "q1", "text": "where do penguins breed"}']
    (root / "queries.jsonl").write_text("\n".join(asked) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


BAD_BEIR = {
    "score not a number": (
        {"qrels": "query-id\tcorpus-id\tscore\nq1\td1\tvery\n"},
        r"qrels/test.tsv:2: the score 'very' is not an integer",
    ),
    "score nan": (
        {"qrels": "query-id\tcorpus-id\tscore\nq1\td1\tnan\n"},
        "test.tsv:2: the score 'nan'",
    ),
    "score inf": ({"qrels": "q1\td1\tinf\n"}, "test.tsv:1: the score 'inf'"),
    "score fraction": ({"qrels": "q1\td1\t0.5\n"}, "test.tsv:1: the score '0.5'"),
    "two columns": ({"qrels": "q1\td1\t1\nq2 d2 1\n"}, "test.tsv:2 is 'q2 d2 1'"),
    "row without _id": (
        {"corpus": ['{"title": "x", "text": "y"}']},
        'corpus.jsonl:1: "_id" is missing',
    ),
    "_id null": ({"corpus": ['{"_id": null, "text": "y"}']}, 'corpus.jsonl:1: "_id" is None'),
    "row not an object": ({"corpus": ['["d1", "text"]']}, "corpus.jsonl:1 is a JSON list"),
    "text not a string": (
        {"corpus": ['{"_id": "d1", "text": {"a": 1}}']},
        'corpus.jsonl:1: "text" must be a string',
    ),
    "query without _id": ({"queries": ['{"text": "q"}']}, 'queries.jsonl:1: "_id" is missing'),
    "deep row": ({"corpus": ["[" * 100_000 + "]" * 100_000]}, "corpus.jsonl:1 is not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_BEIR))
def test_load_beir_names_the_file_line_and_fix(tmp_path: Path, case: str) -> None:
    files, message = BAD_BEIR[case]
    root = _beir(tmp_path / "b", **files)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=message):  # main: ValueError / KeyError
        load_beir(root)


def test_load_beir_non_utf8_file(tmp_path: Path) -> None:
    root = _beir(tmp_path / "b")
    (root / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "caf\xe9"}\n')
    with pytest.raises(InvalidInputError, match="queries.jsonl' is not UTF-8"):
        load_beir(root)


@pytest.mark.parametrize("case", ["score not a number", "row without _id"])
def test_remy_eval_reports_a_bad_row(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files, message = BAD_BEIR[case]
    root = _beir(tmp_path / "b", **files)  # type: ignore[arg-type]
    assert main(["eval", str(root), "--cache", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("remy: error: ") and message.split(":")[0] in err
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("argv", [["ingest", "README.md"], ["search", "fox"], ["doctor"]])
@pytest.mark.parametrize("where", ["/dev/null", "a file", "NUL"])
def test_db_that_cannot_be_a_store(
    tmp_path: Path, argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("keep", encoding="utf-8")
    db = {"/dev/null": "/dev/null", "a file": str(plain), "NUL": str(tmp_path / "a\0b")}[where]
    readme = SOURCE / "README.md"
    argv = [str(readme) if a == "README.md" else a for a in argv]
    assert main([*argv, "--db", db]) == 2  # main: chromadb InternalError / ValueError
    err = capsys.readouterr().err
    assert err.startswith("remy: error: ") and "Traceback" not in err
    assert "not a directory" in err or "NUL character" in err
    assert plain.read_text(encoding="utf-8") == "keep"
