"""Store paths, collection names and the lexical sidecar: what a caller (or a damaged
disk) can hand the store, and the clear error or repair each gets. Real Chroma and
tantivy, with the deterministic token-hash embedder."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest

import remy_retriever
from remy_retriever import Document, Retriever
from remy_retriever.errors import (
    CollectionNotFoundError,
    InvalidInputError,
    RemyError,
    StoreError,
)

sys.path.insert(0, str(Path(__file__).resolve().parent / "reliability"))
from remy_reliability_support import TokenHashEmbedder

#: The remy_retriever under test (the subprocesses import the same one) and the helpers.
SOURCE = Path(remy_retriever.__file__).resolve().parents[1]
SUPPORT = Path(__file__).resolve().parent / "reliability"


def _open(path: Any, **kwargs: Any) -> Retriever:
    return Retriever(path, embedder=TokenHashEmbedder(), **kwargs)


def _made(path: Path) -> Path:
    with _open(path) as r:
        r.add([Document(id="a", text="hello brave new world", title="A")])
    return path


class _BytesPath(os.PathLike):  # type: ignore[type-arg]
    def __fspath__(self) -> bytes:
        return b"/tmp/remy-bytes-path"


# -- bad paths --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "words"),
    [
        (5, "got int 5"),
        (b"/tmp/remy-bytes-path", "got bytes"),
        (_BytesPath(), "got bytes"),
        ("", "is empty"),
        (3.5, "got float"),
    ],
)
def test_path_of_the_wrong_type_is_invalid_input(path: Any, words: str) -> None:
    with pytest.raises(InvalidInputError, match=words):
        _open(path)
    assert not os.path.exists("/tmp/remy-bytes-path")


def test_nul_in_path_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="NUL character"):
        _open(str(tmp_path / "a\0b"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["device", "file", "below a file"])
def test_path_that_is_no_directory_is_invalid_input(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "plain.txt"
    target.write_text("keep me", encoding="utf-8")
    path = {"device": Path("/dev/null"), "file": target, "below a file": target / "store"}[kind]
    with pytest.raises(InvalidInputError, match=r"is a (device|file), not a directory") as err:
        _open(path)
    assert str(target if kind == "below a file" else path) in str(err.value)
    assert target.read_text(encoding="utf-8") == "keep me"


def test_lexical_path_is_checked_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="lexical_path must be"):
        _open(tmp_path / "s", lexical_path=5)
    assert not (tmp_path / "s").exists()


def test_chroma_open_failure_is_a_store_error_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "chroma.sqlite3").write_bytes(b"this is not a database")
    with pytest.raises(StoreError, match="cannot open the embedded store") as err:
        _open(tmp_path / "s")
    assert str(tmp_path / "s") in str(err.value)


def test_create_false_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(CollectionNotFoundError, match="no remy store at .*does not exist"):
        _open(tmp_path / "typo", create=False)
    assert not (tmp_path / "typo").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(CollectionNotFoundError, match="holds no chroma.sqlite3"):
        _open(tmp_path / "empty", create=False)
    assert list((tmp_path / "empty").iterdir()) == []


# -- read-only stores (as an unprivileged user: root may write anywhere) ----------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A fresh directory for a store whose modes the test sets."""
    root = Path(tempfile.mkdtemp(prefix="remy-ro-"))
    root.chmod(0o755)
    yield root
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(root, ignore_errors=True)


def _as_other_user(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` without the power to ignore file modes: as root, it drops the
    capabilities that bypass them (the same user, so it still reads this checkout and
    its venv wherever CI cloned it); as anyone else it runs as is."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a store read-only")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SOURCE), str(SUPPORT)]),
        "HOME": tempfile.gettempdir(),
    }
    code = textwrap.dedent(script)
    return subprocess.run(
        [*prefix, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


_OPEN_AND_SEARCH = """
    import sys
    from remy_retriever import Retriever
    from remy_retriever.errors import RemyError
    from remy_reliability_support import TokenHashEmbedder
    try:
        r = Retriever(sys.argv[1], embedder=TokenHashEmbedder())
        print("OPENED", [h.id for h in r.search("hello", mode="hybrid")])
    except RemyError as exc:
        print("REMYERROR", type(exc).__name__, exc)
"""


def _permit(path: Path, dirs: int, files: int) -> None:
    for dirpath, _, filenames in os.walk(path):
        os.chmod(dirpath, dirs)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), files)


def test_read_only_store_is_a_store_error_naming_the_fix(shared_dir: Path) -> None:
    store = _made(shared_dir / "s")
    _permit(store, 0o555, 0o444)
    done = _as_other_user(_OPEN_AND_SEARCH, str(store))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("REMYERROR StoreError"), done.stdout + done.stderr
    assert str(store) in done.stdout and "read-only" in done.stdout
    assert "chmod" in done.stdout


def test_read_only_lexical_index_is_not_treated_as_damage(shared_dir: Path) -> None:
    store = _made(shared_dir / "s")
    lexical = store / "remy_lexical"
    _permit(store, 0o777, 0o666)  # the other user may write the store...
    _permit(lexical, 0o555, 0o444)  # ...but not its lexical index
    done = _as_other_user(_OPEN_AND_SEARCH, str(store))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("REMYERROR StoreError"), done.stdout + done.stderr
    assert "read-only" in done.stdout and "lexical" in done.stdout
    assert (lexical / "docs" / "state.json").exists()  # nothing was discarded


# -- the lexical index's state.json ------------------------------------------------------


@pytest.mark.parametrize(
    "garbled",
    [
        {"dirty": "yes", "generation": 5},
        {"last_sync_ms": "abc"},
        {"last_sync_ms": 1e400},
        {"last_sync_ms": -5, "dirty": False},
        {"last_sync_ms": 2**70},
        {"generation": {"a": 1}},
        {"dirty": None},
        [1, 2],
        "yes",
    ],
    ids=repr,
)
def test_garbled_state_json_is_repaired_on_open(tmp_path: Path, garbled: Any) -> None:
    store = _made(tmp_path / "s")
    state = store / "remy_lexical" / "docs" / "state.json"
    text = json.dumps(garbled).replace("Infinity", "1e400")
    state.write_text(text, encoding="utf-8")
    with _open(store) as r:  # main: ValueError/OverflowError on every open
        assert [h.id for h in r.search("brave", mode="lexical")] == ["a#0"]
        assert r.doctor().ok
    repaired = json.loads(state.read_text(encoding="utf-8"))
    assert isinstance(repaired, dict) and repaired["dirty"] is False
    assert isinstance(repaired["generation"], str) and isinstance(repaired["last_sync_ms"], int)


def test_state_json_garbled_while_open_is_rebuilt_by_a_search(tmp_path: Path) -> None:
    store = _made(tmp_path / "s")
    with _open(store) as r:
        state = store / "remy_lexical" / "docs" / "state.json"
        state.write_text("[1, 2]", encoding="utf-8")
        assert [h.id for h in r.search("brave", mode="lexical")] == ["a#0"]
        assert isinstance(json.loads(state.read_text(encoding="utf-8")), dict)


# -- the document tables' namespace ------------------------------------------------------


def _names(path: Path) -> set[str]:
    return {c.name for c in chromadb.PersistentClient(path=str(path)).list_collections()}


@pytest.mark.parametrize("first", ["docs", "docs-remydocs"])
def test_names_ending_in_the_table_suffix_are_reserved(tmp_path: Path, first: str) -> None:
    store = tmp_path / "s"
    if first == "docs":
        _made(store)
    before = _names(store) if store.exists() else set()
    with pytest.raises(InvalidInputError, match="reserved for remy's document tables"):
        _open(store, collection="docs-remydocs")
    assert (_names(store) if store.exists() else set()) == before
    if first == "docs":
        with _open(store) as r:
            assert r.get_documents(["a"])["a"].document.text == "hello brave new world"


def test_names_ending_in_the_reembedding_suffix_are_reserved(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="reserved for remy's re-embeddings"):
        _open(tmp_path / "s", collection="docs-0123abcd-remyvectors")
    assert not (tmp_path / "s").exists()


def test_long_collection_names_get_their_own_document_tables(tmp_path: Path) -> None:
    # Both names share their first 503 characters: before, both used one table.
    left, right = "a" * 505 + "x", "a" * 505 + "y"
    with _open(tmp_path / "s", collection=left, lexical_path=tmp_path / "left") as r:
        r.add([Document(id="d", text="left text")])
    with _open(tmp_path / "s", collection=right, lexical_path=tmp_path / "right") as r:
        r.add([Document(id="d", text="right text")])
    with _open(tmp_path / "s", collection=left, lexical_path=tmp_path / "left") as r:
        assert r.get_documents(["d"])["d"].document.text == "left text"
    tables = {n for n in _names(tmp_path / "s") if n.endswith("-remydocs")}
    assert len(tables) == 2 and all(len(n) <= 512 for n in tables)


def test_a_long_name_still_finds_its_table_of_the_old_naming(tmp_path: Path) -> None:
    name = "b" * 500
    lexical = tmp_path / "lexical"
    with _open(tmp_path / "s", collection=name, lexical_path=lexical) as r:
        r.add([Document(id="d", text="kept text", title="Kept")])
    client = chromadb.PersistentClient(path=str(tmp_path / "s"))
    table = next(c for c in client.list_collections() if c.name.endswith("-remydocs"))
    legacy = name[:503] + "-remydocs"  # how stores made before named it
    client.get_collection(table.name).modify(name=legacy)
    with _open(tmp_path / "s", collection=name, lexical_path=lexical) as r:
        assert r.get_documents(["d"])["d"].document.title == "Kept"
        assert r.doctor().ok
    assert {n for n in _names(tmp_path / "s") if n.endswith("-remydocs")} == {legacy}


def test_a_name_too_long_for_a_directory_needs_a_lexical_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="at most 255, unless you pass lexical_path"):
        _open(tmp_path / "s", collection="c" * 300)
    assert not (tmp_path / "s").exists()


def test_every_bad_path_raises_a_remy_error(tmp_path: Path) -> None:
    for path in [5, b"x", "a\0b", "/dev/null", pathlib.PurePosixPath("/dev/null")]:
        with pytest.raises(RemyError):
            _open(path)
