"""Every ``remy`` command under hostile argv: ``main(argv)`` never raises, never prints a
traceback or a raw terminal control character, and exits 0, 1 or 2, with an
``error:`` line on stderr for 2; a rejected command leaves the store as it was.

Generated argv covers every subcommand and flag with hostile values (numbers out of
range, NaN, 2**63, NUL/ESC/surrogate text, 1 MB strings, 100,000-deep JSON, paths to
/dev/null, /proc, regular files, missing folders, broken BEIR folders). Deterministic.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from remy_fuzz_values import FINDINGS, bounded, deep_json, fuzz_settings, record
from remy_reliability_support import TokenHashEmbedder, snapshot

from remy_retriever import Document, MemoryStore, Retriever
from remy_retriever.cli import main as cli_main

pytestmark = pytest.mark.timeout(900)

#: Control characters that may not reach a terminal raw (tab and newline may).
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: On stderr a progress bar may also redraw its line with a carriage return.
RAW_CONTROL_ERR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
ERROR_LINE = re.compile(r"^remy(?: [\w-]+)*: error: ", re.MULTILINE)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A store with a ``fuzz`` collection (one document holds terminal escapes) and a
    ``memories`` collection; scratch files and folders; cwd set to the scratch dir."""
    root = tmp_path_factory.mktemp("cli")
    before = Path.cwd()
    os.chdir(root)
    db = root / "db"
    r = Retriever(db, collection="fuzz", embedder=TokenHashEmbedder())
    r.add(
        [
            Document(
                id=f"doc{i}",
                text=f"# Doc {i}\n\ninstall linux billing {i}",
                metadata={"tenant": "ab"[i % 2]},
            )
            for i in range(6)
        ]
        + [
            Document(
                id="esc",
                text="# \x1b]0;pwned\x07Title\n\ninstall \x1b[2J linux escapes \x9b31m",
                title="\x1b[31mred",
            )
        ]
    )
    mem = MemoryStore(db, embedder=TokenHashEmbedder())
    seeded = mem.add("install memory", container_tag="t").id
    mem.close()
    (root / "file.md").write_text("# A file\n\ninstall")
    (root / "folder").mkdir()
    (root / "folder" / "a.md").write_text("# A\n\ninstall linux")
    _beir(
        root / "beir-ok",
        corpus=['{"_id": "d1", "title": "t", "text": "install linux"}'],
        qrels=["q1\td1\t1"],
    )
    _beir(root / "beir-bad-score", corpus=['{"_id": "d1", "text": "x"}'], qrels=["q1\td1\tabc"])
    _beir(root / "beir-no-id", corpus=['{"text": "x"}'], qrels=["q1\td1\t1"])
    _beir(root / "beir-not-json", corpus=["{not json"], qrels=["q1\td1\t1"])
    _beir(root / "beir-huge", corpus=['{"_id": 1e999, "text": null}'], qrels=["q1\td1\t1e999"])
    _beir(
        root / "beir-query-not-obj",
        corpus=['{"_id": "d1", "text": "x"}'],
        qrels=["q1\td1\t1"],
        queries=["[1, 2]"],
    )
    try:
        yield {"root": root, "db": db, "store": r, "memory": seeded}
    finally:
        r.close()
        os.chdir(before)


def _beir(
    folder: Path, *, corpus: list[str], qrels: list[str], queries: list[str] | None = None
) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(corpus) + "\n")
    rows = queries if queries is not None else ['{"_id": "q1", "text": "install"}']
    (folder / "queries.jsonl").write_text("\n".join(rows) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n"
    )


# -- argv ---------------------------------------------------------------------------------

HOSTILE_TEXT = [
    "",
    " ",
    "-1",
    "0",
    "1",
    "-0",
    "3.5",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "0x10",
    " 5 ",
    str(2**63),
    str(-(2**63)),
    str(10**30),
    "--",
    "-",
    "--json",
    "a\x00b",
    "\x1b]0;pwned\x07",
    "\x1b[2J",
    "\udcff",
    "\ud800",
    "\u202eevil",
    "é",
    "#x",
    "$and",
    "remy_doc_id",
    "null",
    "[]",
    "{}",
    '{"tenant": "a"}',
    '{"tenant": {"$in": [1, 2.5]}}',
    '{"#x": 1}',
    '{"a": NaN}',
    '{"year": 9223372036854775808}',
    '{"$and": []}',
    '"str"',
    "{bad json",
    "/dev/null",
    "/proc/self/status",
    "/proc",
    "/sys/remy",
    "/nonexistent/deep/path",
    ".",
    "file.md",
    "file.md/sub",
    "folder",
    "beir-ok",
    "x" * 5000,
]
text = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=12),
    st.sampled_from(["<1 MB>", "<deep 100,000>", "<deep 2,000>", "<$in 100,000>"]),
)


def _expand(value: str, world: dict[str, Any]) -> str:
    special = {
        "<1 MB>": "install " * 131_072,
        "<deep 100,000>": deep_json(100_000),
        "<deep 2,000>": deep_json(2_000),
        "<$in 100,000>": json.dumps({"tenant": {"$in": list(range(100_000))}}),
        "<db>": str(world["db"]),
        "<memory>": world["memory"],
    }
    return special.get(value, value)


def _flag(name: str, valid: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """Absent, valid, or hostile; as ``--name value``."""
    return st.one_of(st.just([]), valid.map(lambda v: [name, v]), text.map(lambda v: [name, v]))


def _switch(name: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from([[], [name]])


def _argv(parts: list[st.SearchStrategy[list[str]]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda ps: [a for p in ps for a in p])


db = _flag("--db", st.just("<db>"))
modes = st.sampled_from(["semantic", "lexical", "hybrid"])
search_argv = _argv(
    [
        st.just(["search"]),
        st.one_of(st.sampled_from([["install linux"], ["escapes"]]), text.map(lambda t: [t])),
        db,
        _flag("--collection", st.just("fuzz")),
        _flag("--mode", modes),
        _flag("--k", st.integers(1, 20).map(str)),
        _flag("--where", st.sampled_from(['{"tenant": "a"}'])),
        _switch("--explain"),
        _flag("--expand", st.integers(0, 3).map(str)),
        _switch("--highlight"),
        st.one_of(
            st.just([]), st.just(["--rerank", "not-a-model"]), text.map(lambda t: ["--rerank", t])
        ),
        _flag("--rerank-depth", st.integers(1, 50).map(str)),
        _switch("--json"),
        _switch("--documents"),
        _flag("--chunk-threshold", st.floats(0, 1).map(str)),
        _flag("--document-threshold", st.floats(0, 1).map(str)),
        _switch("--only-matching-chunks"),
        _switch("--full-docs"),
        _switch("--summary"),
    ]
)
ingest_argv = _argv(
    [
        st.just(["ingest"]),
        st.lists(st.one_of(st.sampled_from(["file.md", "folder"]), text), min_size=1, max_size=2),
        db,
        _flag("--collection", st.just("ingested")),
        st.sampled_from([[], ["--progress"], ["--no-progress"]]),
    ]
)
doctor_argv = _argv(
    [
        st.just(["doctor"]),
        db,
        _flag("--collection", st.just("fuzz")),
        _switch("--repair"),
        _switch("--json"),
    ]
)
memory_common = [db, _flag("--collection", st.just("memories")), _switch("--json")]
memory_argv = st.one_of(
    _argv(
        [
            st.just(["memory", "add"]),
            st.one_of(st.just(["a fact"]), text.map(lambda t: [t])),
            _flag("--container", st.just("t")),
            _flag("--metadata", st.just('{"n": 1}')),
            _flag("--document", st.just("doc1")),
            *memory_common,
        ]
    ),
    _argv(
        [
            st.just(["memory", "update"]),
            st.one_of(st.just(["<memory>"]), text.map(lambda t: [t])),
            st.one_of(st.just(["changed"]), text.map(lambda t: [t])),
            _flag("--metadata", st.just('{"n": 2}')),
            *memory_common,
        ]
    ),
    _argv(
        [
            st.just(["memory", "search"]),
            st.one_of(st.just(["install"]), text.map(lambda t: [t])),
            _flag("--search-mode", st.sampled_from(["memories", "hybrid", "documents"])),
            _flag("--mode", modes),
            _flag("--limit", st.integers(1, 20).map(str)),
            _flag("--threshold", st.floats(0, 1).map(str)),
            _flag("--container", st.just("t")),
            _flag("--where", st.just('{"n": 1}')),
            _switch("--related"),
            _switch("--documents"),
            _flag("--docs-collection", st.just("fuzz")),
            st.one_of(st.just([]), text.map(lambda t: ["--rerank", t])),
            *memory_common,
        ]
    ),
    _argv(
        [
            st.sampled_from([["memory", "history"], ["memory", "forget"]]),
            st.one_of(st.just(["<memory>"]), text.map(lambda t: [t])),
            *memory_common,
        ]
    ),
)
beir_dirs = st.sampled_from(
    ["beir-bad-score", "beir-no-id", "beir-not-json", "beir-huge", "beir-query-not-obj", "beir-ok"]
)
eval_argv = _argv(
    [
        st.just(["eval"]),
        st.one_of(beir_dirs.map(lambda d: [d]), text.map(lambda t: [t])),
        st.lists(st.one_of(modes, text), max_size=2).map(
            lambda ms: [a for m in ms for a in ("--mode", m)]
        ),
        _flag("--k", st.integers(1, 20).map(str)),
        _flag("--depth", st.integers(1, 100).map(str)),
        _flag("--candidates", st.integers(1, 100).map(str)),
        _flag("--fusion", st.sampled_from(["rrf", "convex"])),
        _flag("--alpha", st.floats(0, 1).map(str)),
        _flag("--rerank-depth", st.integers(1, 50).map(str)),
        st.just(["--cache", "eval-cache", "--no-progress"]),
        _switch("--json"),
    ]
)


def _run(argv: list[str]) -> tuple[int, str, str, BaseException | None]:
    out, err = io.StringIO(), io.StringIO()
    escaped: BaseException | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: Any = bounded(lambda: cli_main(argv))
        except SystemExit as exc:  # argparse: 2 on a usage error
            code = exc.code
        except Exception as exc:  # a crash: main() must never raise
            code, escaped = None, exc
    return code, out.getvalue(), err.getvalue(), escaped


def _check(world: dict[str, Any], argv: list[str]) -> None:
    argv = [_expand(a, world) for a in argv]
    store = world["store"]
    before = snapshot(store)
    code, out, err, escaped = _run(argv)
    shown = [a if len(a) < 200 else f"<{len(a)} chars>" for a in argv]
    problems = []
    if escaped is not None:
        problems.append(f"main() raised {type(escaped).__name__}: {str(escaped)[:200]}")
    elif code not in (0, 1, 2):
        problems.append(f"exit code {code!r}")
    if "Traceback (most recent call last)" in out + err:
        problems.append("printed a traceback")
    if code == 2 and not ERROR_LINE.search(err):
        problems.append(f"exit 2 without an 'error:' line on stderr: {err[-300:]!r}")
    raw = RAW_CONTROL_ERR.search(err) or (None if "--json" in argv else RAW_CONTROL.search(out))
    if raw:
        problems.append(f"raw control character {raw.group()!r} in the output")
    if code != 0 and snapshot(store) != before:
        problems.append("a rejected command changed the store")
    if argv[0] in ("search", "doctor") and snapshot(store) != before:
        problems.append(f"remy {argv[0]} changed the store")
    if problems:
        if FINDINGS:
            record(f"remy {argv[0]}", AssertionError("; ".join(problems)), shown)
            return
        raise AssertionError(
            f"remy {' '.join(map(repr, shown))}:\n  "
            + "\n  ".join(problems)
            + f"\n  stderr: {err[-500:]!r}"
        )


@pytest.mark.slow
@fuzz_settings(max_examples=150)
@given(argv=st.one_of(search_argv, ingest_argv, doctor_argv, memory_argv))
def test_every_command_and_flag(world: dict[str, Any], argv: list[str]) -> None:
    _check(world, argv)


@pytest.mark.slow
@fuzz_settings(max_examples=25)
@given(argv=eval_argv)
def test_eval_with_hostile_folders_and_flags(world: dict[str, Any], argv: list[str]) -> None:
    _check(world, argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "install", "--db", "<db>", "--collection", "fuzz", "--where", "<deep 100,000>"],
        [
            "search",
            "install",
            "--db",
            "<db>",
            "--collection",
            "fuzz",
            "--documents",
            "--where",
            "<deep 100,000>",
        ],
        ["memory", "search", "install", "--db", "<db>", "--where", "<deep 100,000>"],
        ["search", "install", "--db", "/dev/null"],
        ["search", "install", "--db", "file.md"],
        ["doctor", "--db", "/proc/self/status"],
        ["ingest", "/proc/self/status", "--db", "<db>", "--collection", "ingested"],
        ["ingest", "folder", "--db", "file.md/sub"],
        ["search", "install", "--db", "<db>", "--collection", "fuzz"],
        ["search", "install", "--db", "<db>", "--collection", "fuzz", "--json"],
        ["search", "escapes", "--db", "<db>", "--collection", "fuzz", "--explain", "--highlight"],
        ["search", "escapes", "--db", "<db>", "--collection", "fuzz", "--documents", "--summary"],
        ["search", "install", "--db", "<db>", "--collection", "fuzz", "--documents", "--summary"],
        ["eval", "beir-bad-score", "--cache", "eval-cache"],
        ["eval", "beir-no-id", "--cache", "eval-cache"],
    ],
    ids=lambda argv: " ".join(a[:20] for a in argv),
)
def test_known_hostile_command_lines(world: dict[str, Any], argv: list[str]) -> None:
    _check(world, argv)
