"""Dense reachability: a chunk that Chroma's HNSW graph cannot reach (here: every link to
it cut from the persisted graph, as a writer killed while Chroma persisted its index can
leave it) is still found by lexical and hybrid search, is reported by ``doctor``, and is
re-inserted by ``doctor(repair=True)`` / ``remy doctor --full --repair``, after which
dense search finds it again, also in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hnsw_graph import cut_incoming_links
from remy_reliability_support import TokenHashEmbedder, check_indexes_agree
from store_worker import COLLECTION, bulk_documents

from remy_retriever import Document, InvalidInputError, Retriever
from remy_retriever.cli import main as cli_main
from remy_retriever.stores.reachability import raw_records

WORKER = Path(__file__).resolve().parent / "store_worker.py"
#: Past Chroma's persist threshold (1,000 records), so the graph is on disk to damage.
CHUNKS = 1200


def _build(store: Path, prefix: str) -> None:
    """CHUNKS one-chunk documents, written by another process (this one never loads the
    store before its files are damaged)."""
    subprocess.run(
        [sys.executable, str(WORKER), str(store), "bulk-add", prefix, str(CHUNKS)],
        check=True,
        timeout=240,
        capture_output=True,
    )


def _cut(store: Path, prefix: str) -> str:
    """Make one chunk unreachable; its id."""
    for n in (500, 501, 502):  # one of them is not the graph's entry point
        try:
            assert cut_incoming_links(store, f"{prefix}{n}#0") > 0
        except ValueError:
            continue
        return f"{prefix}{n}#0"
    msg = "no chunk to cut"
    raise AssertionError(msg)


def _own_text(r: Retriever, cid: str) -> str:
    [(_, text, _)] = r._sync.dense.get(ids=[cid])
    return text


def _semantic_ids(r: Retriever, text: str) -> list[str]:
    return [h.id for h in r.search(text, mode="semantic", k=10)]


@pytest.mark.timeout(300)
def test_doctor_finds_and_reinserts_a_chunk_the_hnsw_graph_cannot_reach(tmp_path: Path) -> None:
    store = tmp_path / "db"
    _build(store, "b")
    cid = _cut(store, "b")
    doc = cid.split("#")[0]
    with Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder()) as r:
        text = _own_text(r, cid)
        # Stored, with its vector, but a dense search for its own text never returns it.
        assert r._sync.dense.missing_vectors([cid]) == []
        assert cid not in _semantic_ids(r, text)
        # The lexical branch still finds it, so hybrid search returns it.
        assert [h.id for h in r.search(f"unique{doc}", mode="lexical", k=3)][:1] == [cid]
        assert cid in [h.id for h in r.search(f"unique{doc}", mode="hybrid", k=3)]
        assert cid in [h.id for h in r.search(text, mode="hybrid", k=10)]

        report = r.doctor(full=True)
        assert report.reachability_checked == CHUNKS
        assert report.unreachable == (cid,)
        assert not report.ok and not report.fixed
        assert report.missing_vectors == () and report.partial_documents == ()

        repaired = r.doctor(full=True, repair=True)
        assert repaired.unreachable == (cid,)
        assert repaired.unreachable_after_repair == ()
        assert repaired.fixed

        after = r.doctor(full=True)
        assert after.ok and after.unreachable == (), after
        assert _semantic_ids(r, text)[0] == cid
        assert r.get_documents([doc])[doc].document.text.startswith(f"unique{doc} ")
        check_indexes_agree(r)
    # The re-insert is in the store, not only in this process's copy of the index.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[3]);"
        "from remy_reliability_support import TokenHashEmbedder;"
        "from remy_retriever import Retriever;"
        "r = Retriever(sys.argv[1], collection=sys.argv[2], embedder=TokenHashEmbedder());"
        "print([h.id for h in r.search(sys.stdin.read(), mode='semantic', k=10)][0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(store), COLLECTION, str(WORKER.parent)],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip() == cid


@pytest.mark.timeout(300)
def test_doctor_checks_a_sample_by_default_and_all_with_full(tmp_path: Path) -> None:
    store = tmp_path / "db"
    _build(store, "s")
    cid = _cut(store, "s")
    with Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder()) as r:
        sampled = r.doctor()
        assert sampled.reachability_checked == 1000
        assert set(sampled.unreachable) <= {cid}
        skipped = r.doctor(sample=0)
        assert skipped.reachability_checked == 0 and skipped.ok  # nothing else is wrong
        assert r.doctor(sample=CHUNKS).unreachable == (cid,)
        assert r.doctor(full=True, sample=0).unreachable == (cid,)
        with pytest.raises(InvalidInputError, match="sample"):
            r.doctor(sample=-1)
        with pytest.raises(InvalidInputError, match="full"):
            r.doctor(full="yes")  # type: ignore[arg-type]


@pytest.mark.timeout(300)
def test_a_chunk_removed_by_an_interrupted_reinsert_is_put_back(tmp_path: Path) -> None:
    """A repair killed between deleting an unreachable chunk and adding it again leaves
    the chunk only in its journal; the next repair puts it back, and the document stays
    whole instead of being dropped as partial."""
    store = tmp_path / "db"
    with Retriever(store, collection="kbase", embedder=TokenHashEmbedder()) as r:
        long = "# Doc\n\n" + "\n\n".join(f"## Part {i}\n\nalpha{i} words here" for i in range(6))
        r.add([Document(id="doc", text=long)])
        ids = sorted(cid for cid, _, _ in r._sync.dense.get(where={"remy_doc_id": "doc"}))
        assert len(ids) > 2
        cid = ids[1]
        [(_, text, _)] = r._sync.dense.get(ids=[cid])
        journal = r._sync.journal
        journal.save(raw_records(r._sync.dense, [cid]))
        r._sync.dense.delete([cid])  # the state the killed repair left
        assert r._sync.dense.get(ids=[cid]) == []
        report = r.doctor(repair=True)
        assert report.partial_documents == () and report.dropped_chunks == (), report
        assert not journal.path.exists()
        assert r._sync.dense.get(ids=[cid])[0][1] == text
        assert r.doctor().ok
        assert r.get_documents(["doc"])["doc"].chunk_count == len(ids)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cli_doctor_full_repair_reinserts_an_unreachable_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "db"
    # The real default model: the CLI rebuilds only built-in embedders from a store's
    # record (a recorded custom class is never imported).
    with Retriever(store, collection="kbase") as r:
        r.add(bulk_documents("c", CHUNKS))
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # this process lets go of the loaded index
    cid = _cut(store, "c")
    base = ["--db", str(store), "--collection", "kbase"]
    assert cli_main(["doctor", *base, "--full", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["unreachable"] == [cid]
    assert report["reachability_checked"] == CHUNKS
    assert cli_main(["doctor", *base, "--full", "--repair"]) == 0
    out = capsys.readouterr().out
    assert f"unreachable: 1 ({cid})" in out and "status: repaired" in out
    assert cli_main(["doctor", *base, "--full"]) == 0
    assert "status: ok" in capsys.readouterr().out
    with Retriever(store, collection="kbase") as r:
        assert _semantic_ids(r, _own_text(r, cid))[0] == cid
