"""``remy ingest``'s exit codes, one per failure kind (issue 27): 0 only when every file
was read or skipped on purpose, 1 when any file failed (and with ``--strict``, at the
first, storing nothing), 2 for a usage error. Main exited 0 for a file that is not
UTF-8 and 2 under ``--strict``, so a script could not tell success from partial failure.

The real CLI (``remy_retriever.cli.main``, and ``python -m remy_retriever.cli`` where the
file modes must apply to root) on real embedded stores."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remy_retriever import Retriever
from remy_retriever.cli import main

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def _folder(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def _ids(db: Path) -> list[str]:
    with Retriever(db, collection="docs", create=False) as r:
        return r.document_ids()


def _ingest(*argv: str) -> int:
    return main(["ingest", *argv, "--no-progress"])


def test_exit_0_only_when_everything_was_read_or_skipped_by_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "outside.md").write_text("secret outside")
    docs = _folder(tmp_path / "docs", {"good.md": "# Good\n\nwombat notes", "tool.py": "x = 1"})
    (docs / "link.md").symlink_to(tmp_path / "outside.md")  # a link out: skipped
    os.mkfifo(docs / "pipe.md")  # a special file: skipped
    db = str(tmp_path / "db")
    assert _ingest(str(docs), "--db", db) == 0
    err = capsys.readouterr().err
    assert "skipped 3 file(s)" in err and "failed" not in err
    assert _ids(tmp_path / "db") == ["good.md"]
    (docs / "notes.md").write_bytes(b"\xff\xfe not UTF-8")  # main: still 0
    assert _ingest(str(docs), "--db", db) == 1
    assert "failed 1 file(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("latin1.md", "caf\xe9 na\xefve".encode("latin-1"), "not UTF-8"),
        ("binary.txt", b"\x00\x01binary\x00", "NUL"),
    ],
    ids=["not UTF-8", "not text"],
)
def test_a_file_that_is_not_text_exits_1_and_the_rest_are_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, reason: str
) -> None:
    docs = _folder(tmp_path / "docs", {"good.md": "# Good\n\nwombat notes", name: content})
    db = str(tmp_path / "db")
    assert _ingest(str(docs), "--db", db) == 1  # mixed: one read, one failed
    err = capsys.readouterr().err
    assert "failed 1 file(s)" in err and name in err and reason in err
    assert _ids(tmp_path / "db") == ["good.md"]
    # named directly: the same code
    assert _ingest(str(docs / name), "--db", db) == 1
    err = capsys.readouterr().err
    assert err.startswith("remy: error: ") and name in err and reason in err


def test_strict_exits_1_at_the_first_failure_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "alpha", "b.md": b"\xff\xfe", "tool.py": "x"})
    db = tmp_path / "db"
    assert _ingest(str(docs), "--db", str(db), "--strict") == 1
    err = capsys.readouterr().err
    assert "strict" in err and "b.md" in err and "nothing was stored" in err
    assert _ids(db) == []
    (docs / "b.md").write_text("beta")  # a skipped type alone never stops --strict
    assert _ingest(str(docs), "--db", str(db), "--strict") == 0
    assert _ids(db) == ["a.md", "b.md"]


def _remy_as_if_not_root(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``remy`` in a process where file modes apply: root reads any file whatever its
    mode, so as root the process runs without the capabilities that allow it."""
    command = [sys.executable, "-m", "remy_retriever.cli", *argv]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)


def test_an_unreadable_file_or_folder_exits_1(tmp_path: Path) -> None:
    docs = _folder(
        tmp_path / "docs",
        {"locked.md": "hidden", "closed/inner.md": "inside a closed folder", "tool.py": "x"},
    )
    (docs / "locked.md").chmod(0)
    (docs / "closed").chmod(0)
    db = str(tmp_path / "db")
    try:
        folder = _remy_as_if_not_root(["ingest", str(docs), "--db", db, "--no-progress"])
        named = _remy_as_if_not_root(["ingest", str(docs / "locked.md"), "--db", db])
    finally:
        (docs / "closed").chmod(0o755)
    assert folder.returncode == 1, folder.stderr
    assert "failed 2 file(s)" in folder.stderr and "Permission denied" in folder.stderr
    assert "cannot list this folder" in folder.stderr
    assert named.returncode == 1, named.stderr
    assert "locked.md" in named.stderr and "Permission denied" in named.stderr


def _exit_code(argv: list[str]) -> int:
    """``remy ARGV``'s exit status (argparse's own errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


#: ``remy ingest`` arguments that are a usage error, and what the error says.
USAGE_ERRORS = {
    "unknown flag": (["{docs}", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    "no path": ([], "the following arguments are required: PATH"),
    "missing path": (["{missing}"], "no such file or directory"),
    "bad metadata": (["{docs}", "--metadata", "[1]"], "--metadata"),
    "bad id prefix": (["{docs}", "--id-prefix", "a#b"], "id_prefix"),
    "a FIFO named": (["{docs}/pipe.md"], "a FIFO, not a file or folder"),
    "no loader for the type": (["{docs}/tool.py"], "unsupported type"),
    "two files one id": (["{docs}", "{other}"], "two files would both be document 'a.md'"),
}


def test_usage_errors_exit_2_never_the_code_of_a_failed_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path / "docs", {"a.md": "alpha", "tool.py": "x = 1", "bad.md": b"\xff"})
    os.mkfifo(docs / "pipe.md")
    other = _folder(tmp_path / "other", {"a.md": "another alpha"})
    paths = {"docs": docs, "other": other, "missing": tmp_path / "missing"}
    for case, (argv, message) in USAGE_ERRORS.items():
        db = tmp_path / case.replace(" ", "-")
        args = [a.format(**paths) for a in argv]
        code = _exit_code(["ingest", *args, "--db", str(db), "--no-progress"])
        err = capsys.readouterr().err
        assert (code, message in err) == (2, True), (case, err)
        if db.exists():
            assert _ids(db) == [], case
    # A file that is named properly but cannot be used is not a usage error (main: 2).
    assert _exit_code(["ingest", str(docs / "bad.md"), "--db", str(tmp_path / "db")]) == 1


@pytest.mark.parametrize(
    ("name", "content", "flags"),
    [
        # half a million elements: a parse tree far over a 160 MiB budget
        (
            "tags.html",
            b"<html><body>" + b"<p><b>x</b></p>" * 500_000,
            ["--max-parse-memory", "160M"],
        ),
        # menus nested 80,000 deep: clutter removal far over a one-second budget
        (
            "menus.html",
            b"<html><body>" + b'<div class="menu"><a>m</a>' * 80_000 + b"x",
            ["--max-parse-seconds", "1"],
        ),
    ],
    ids=["over the memory budget", "over the time budget"],
)
def test_a_file_over_its_parse_budget_exits_1_and_the_rest_are_stored(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes,
    flags: list[str],
) -> None:
    docs = _folder(tmp_path / "docs", {"good.md": "# Good\n\nwombat notes", name: content})
    db = str(tmp_path / "db")
    assert _ingest(str(docs), "--db", db, *flags) == 1
    err = capsys.readouterr().err
    assert "failed 1 file(s)" in err and name in err
    assert "too large or too slow to parse" in err
    assert _ids(tmp_path / "db") == ["good.md"]
