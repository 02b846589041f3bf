"""A collection records its embedder's
identity and refuses another model (unless re-embedding); a store never chooses code to
run; a model that cannot load creates nothing. Real Chroma, real tantivy, the real
MiniLM model where the model is the point, the deterministic TokenHashEmbedder else."""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from remy_retriever import (
    Document,
    InvalidInputError,
    ModelLoadError,
    OnnxEmbedder,
    Retriever,
    SentenceTransformerEmbedder,
    StoreError,
)
from remy_retriever.models.embeddings import RemyEmbeddingFunction
from remy_retriever.retriever import list_collections
from remy_retriever.stores.dense import GENERATION_MAX_AGE
from remy_retriever.stores.identity import identify

sys.path.insert(0, str(Path(__file__).resolve().parent / "reliability"))

from remy_reliability_support import TokenHashEmbedder

MODES = ("semantic", "lexical", "hybrid")
DOCS = [
    Document(id="linux", text="# Linux\n\nInstall the agent on Linux with apt and systemd."),
    Document(id="mac", text="# macOS\n\nUse Homebrew: brew install remy on a Mac."),
    Document(id="billing", text="# Billing\n\nInvoices are sent monthly; refunds take days."),
]


class SaltedHashEmbedder(TokenHashEmbedder):
    """Another deterministic fake of the same dimension (384): other word vectors."""

    model_id = "test/salted-hash"

    def _word(self, word: str) -> np.ndarray:
        return super()._word("salt:" + word)


class FailingEmbedder(SaltedHashEmbedder):
    """SaltedHashEmbedder that embeds one text (the probe, so it opens) but fails on a
    batch."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1:
            msg = "GPU fell off the bus"
            raise RuntimeError(msg)
        return super().embed_documents(texts)


def _vectors(r: Retriever) -> dict[str, np.ndarray]:
    got = r._sync.dense.collection.get(include=["embeddings"])
    return {i: np.asarray(v) for i, v in zip(got["ids"], got["embeddings"])}


def _perturbed_minilm(path: str) -> SentenceTransformerEmbedder:
    """MiniLM's weights with one layer perturbed (seeded): same name, same dimension,
    another model."""
    import torch

    embedder = SentenceTransformerEmbedder()  # model_id: the default model's name
    model = embedder.model.__class__(path, device="cpu")
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        weight = model[0].auto_model.encoder.layer[5].output.dense.weight
        weight.add_(torch.randn(weight.shape, generator=generator) * 0.2)
    embedder._model = model
    return embedder


# -- item 4: another model of the same dimension ----------------------------------------


@pytest.mark.slow
def test_a_different_model_of_the_same_dimension_is_refused(tmp_path: Path, embedder: Any) -> None:
    with Retriever(tmp_path / "db", embedder=embedder) as r:
        r.add(DOCS)
        before = _vectors(r)
    with pytest.raises(ModelLoadError) as caught:
        Retriever(tmp_path / "db", embedder=TokenHashEmbedder())
    message = str(caught.value)
    for part in ("all-MiniLM-L6-v2", "test/token-hash", "384 dimensions", "reembed=True"):
        assert part in message, message
    with Retriever(tmp_path / "db") as reopened:  # the refused open changed nothing
        assert _vectors(reopened).keys() == before.keys()
        assert reopened.search("homebrew on a mac", mode="semantic", k=1)[0].id.startswith("mac")


@pytest.mark.slow
def test_the_same_weights_perturbed_are_refused_under_the_same_name(
    tmp_path: Path, embedder: Any, minilm_path: str
) -> None:
    perturbed = _perturbed_minilm(minilm_path)
    assert perturbed.model_id == embedder.model_id
    Retriever(tmp_path / "db", embedder=embedder).close()
    with pytest.raises(ModelLoadError, match=r"their vectors differ \(cosine 0\.\d+"):
        Retriever(tmp_path / "db", embedder=perturbed)


@pytest.mark.slow
def test_the_same_model_under_another_name_is_accepted(
    tmp_path: Path, embedder: Any, minilm_path: str
) -> None:
    with Retriever(tmp_path / "db", embedder=embedder) as r:
        r.add(DOCS)
    with Retriever(tmp_path / "db", embedder=minilm_path) as by_path:
        assert by_path.embedder.model_id == minilm_path  # type: ignore[attr-defined]
        assert by_path.search("homebrew on a mac", mode="semantic", k=1)[0].id.startswith("mac")


def test_fake_embedders_of_equal_dimension_are_told_apart(tmp_path: Path) -> None:
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
    Retriever(tmp_path / "db", embedder=TokenHashEmbedder()).close()  # same: fine
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        generation = r._sync.dense.generation()
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder(), reembed=True) as r:
        assert r._sync.dense.generation() == generation, "re-embedding to the same model is a no-op"
    with pytest.raises(ModelLoadError, match="'test/token-hash'.*not with 'test/salted-hash'"):
        Retriever(tmp_path / "db", embedder=SaltedHashEmbedder())
    with pytest.raises(ModelLoadError, match="dimensions differ"):
        Retriever(tmp_path / "db", embedder=TokenHashEmbedder(dim=64))


@pytest.mark.server
def test_a_server_collection_refuses_another_model(tmp_path: Path, http_client: Any) -> None:
    name = f"ident-{os.getpid()}-{tmp_path.name[-20:]}".replace("_", "-")
    kwargs: dict[str, Any] = {"client": http_client, "collection": name}
    with Retriever(embedder=TokenHashEmbedder(), lexical_path=tmp_path / "lex", **kwargs) as r:
        r.add(DOCS)
    with pytest.raises(ModelLoadError, match="'test/token-hash'.*not with 'test/salted-hash'"):
        Retriever(embedder=SaltedHashEmbedder(), lexical_path=tmp_path / "lex", **kwargs)
    Retriever(
        embedder=SaltedHashEmbedder(), lexical_path=tmp_path / "lex", reembed=True, **kwargs
    ).close()
    with Retriever(embedder=SaltedHashEmbedder(), lexical_path=tmp_path / "lex", **kwargs) as r:
        assert r.search("brew mac", mode="semantic", k=1)[0].id.startswith("mac")


def test_a_store_from_before_identities_records_one_on_first_open(tmp_path: Path) -> None:
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
        meta = dict(r._sync.dense.collection.metadata)
        assert "remy_embedder" in meta
        del meta["remy_embedder"]
        r._sync.dense.collection.modify(metadata=meta)  # as a store made before this change
    with Retriever(tmp_path / "db", embedder=SaltedHashEmbedder()) as first:  # not refused
        recorded = json.loads(first._sync.dense.collection.metadata["remy_embedder"])
    assert recorded["name"] == "test/salted-hash"
    with pytest.raises(ModelLoadError, match="'test/salted-hash'"):
        Retriever(tmp_path / "db", embedder=TokenHashEmbedder())


def test_a_write_after_another_process_re_embedded_is_refused(tmp_path: Path) -> None:
    old = Retriever(tmp_path / "db", embedder=TokenHashEmbedder())
    old.add(DOCS)
    Retriever(tmp_path / "db", embedder=SaltedHashEmbedder(), reembed=True).close()
    count = old.count()
    with pytest.raises(ModelLoadError, match="'test/salted-hash'"):
        old.add([Document(id="late", text="written with the old model")])
    assert old.count() == count
    old.close()


def test_a_search_after_another_retriever_re_embedded_is_refused(tmp_path: Path) -> None:
    """A long-lived reader must not compare its old model's query vectors with the new
    model's stored ones."""
    old = Retriever(tmp_path / "db", embedder=TokenHashEmbedder())
    old.add(DOCS)
    assert old.search("install on linux", mode="semantic", k=1)
    Retriever(tmp_path / "db", embedder=SaltedHashEmbedder(), reembed=True).close()
    time.sleep(2 * GENERATION_MAX_AGE)  # a search may reuse a generation read this recently
    for mode in ("semantic", "hybrid", "lexical"):
        with pytest.raises(ModelLoadError, match="'test/salted-hash'"):
            old.search("install on linux", mode=mode, k=1)
    again = Retriever(tmp_path / "db", embedder=SaltedHashEmbedder())
    assert again.search("install on linux", mode="semantic", k=1)
    old.close()
    again.close()


# -- re-embedding ----------------------------------------------------------------------


@pytest.mark.slow
def test_reembed_replaces_every_vector_and_the_record(tmp_path: Path, embedder: Any) -> None:
    with Retriever(tmp_path / "db", embedder=embedder) as r:
        r.add(DOCS)
    fake = TokenHashEmbedder()
    with Retriever(tmp_path / "db", embedder=fake, reembed=True) as r:
        stored = _vectors(r)
        texts = {
            cid: text for page in r._sync.dense.iter_all(metadatas=False) for cid, text, _ in page
        }
        for cid, vector in stored.items():
            assert np.allclose(vector, fake.embed_documents([texts[cid]])[0], atol=1e-5), cid
        for mode in MODES:
            assert r.search("brew mac", mode=mode, k=1)[0].id.startswith("mac"), mode
        assert r.doctor().ok
    with pytest.raises(ModelLoadError, match="was embedded with 'test/token-hash'"):
        Retriever(tmp_path / "db", embedder=embedder)
    # The store records a custom class now: reopening it needs embedder= (item 5).
    with pytest.raises(ModelLoadError, match="TokenHashEmbedder.*embedder="):
        Retriever(tmp_path / "db")
    # And back to the built-in model: a plain reopen rebuilds it from the record.
    Retriever(tmp_path / "db", embedder="all-MiniLM-L6-v2", reembed=True).close()
    with Retriever(tmp_path / "db") as r:
        # The default backend: torch, or ONNX when remy-retriever[onnx] is installed.
        assert isinstance(r.embedder, (SentenceTransformerEmbedder, OnnxEmbedder))
        assert r.search("homebrew on a mac", mode="semantic", k=1)[0].id.startswith("mac")


class RenamedHashEmbedder(TokenHashEmbedder):
    """TokenHashEmbedder's very vectors under another model name: what a model fine-tuned
    for a few steps looks like to the probe (remy adapt's output on a short budget)."""

    model_id = "test/renamed-hash"


def test_reembed_with_another_model_whose_probe_vectors_match_records_that_model(
    tmp_path: Path,
) -> None:
    """The probe vectors alone would call the two the same model; the caller named
    another one, so the re-embedding runs and the record names it (a later plain open
    then loads it, and `remy adapt --revert` has something to go back from)."""
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
        assert r._sync.dense.identity is not None
        assert r._sync.dense.identity.matches(identify(RenamedHashEmbedder()))
    with Retriever(tmp_path / "db", embedder=RenamedHashEmbedder(), reembed=True) as r:
        assert r.count() == 3
    with pytest.raises(ModelLoadError, match="RenamedHashEmbedder.*embedder="):
        Retriever(tmp_path / "db")
    # Asked again for the model it records, complete: nothing to do.
    with Retriever(tmp_path / "db", embedder=RenamedHashEmbedder(), reembed=True) as r:
        assert r._sync.dense.reembed_pending is False


def test_a_failed_reembed_keeps_the_old_model_and_vectors(tmp_path: Path) -> None:
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
        before = _vectors(r)
    with pytest.raises(ModelLoadError, match="failed while re-embedding.*keeps its old vectors"):
        Retriever(tmp_path / "db", embedder=FailingEmbedder(), reembed=True)
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    shadows = [c.name for c in client.list_collections() if c.name.endswith("-remyvectors")]
    assert len(shadows) == 1  # the failed run's shadow, until the next open drops it
    with pytest.raises(ModelLoadError, match="was embedded with 'test/token-hash'"):
        Retriever(tmp_path / "db", embedder=SaltedHashEmbedder())
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        assert list_collections(tmp_path / "db") == ["docs"]
        after = _vectors(r)
        assert after.keys() == before.keys()
        assert all(np.array_equal(after[c], before[c]) for c in before)
        assert r.search("invoices refunds", mode="semantic", k=1)[0].id.startswith("billing")
    assert not [c for c in client.list_collections() if c.name.endswith("-remyvectors")]
    Retriever(tmp_path / "db", embedder=SaltedHashEmbedder(), reembed=True).close()
    with Retriever(tmp_path / "db", embedder=SaltedHashEmbedder()) as r:
        assert r.search("invoices refunds", mode="semantic", k=1)[0].id.startswith("billing")
        assert r.doctor().ok


def test_a_store_an_in_place_reembed_left_mixed_is_refused_until_reembedded(
    tmp_path: Path,
) -> None:
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
        # What an interrupted in-place re-embedding of an earlier version left.
        pending = r._sync.dense.identity
        assert pending is not None
        r._sync.dense.set_metadata({"remy_embedder_pending": pending.to_json()}, "mark")
    for embedder in (TokenHashEmbedder(), SaltedHashEmbedder()):
        with pytest.raises(ModelLoadError, match="was interrupted.*reembed=True"):
            Retriever(tmp_path / "db", embedder=embedder)
    Retriever(tmp_path / "db", embedder=SaltedHashEmbedder(), reembed=True).close()
    with Retriever(tmp_path / "db", embedder=SaltedHashEmbedder()) as r:
        assert r.search("invoices refunds", mode="semantic", k=1)[0].id.startswith("billing")
        assert r.doctor().ok


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reembed": True}, "reembed=True needs the new model"),
        ({"reembed": "yes", "embedder": TokenHashEmbedder()}, "reembed must be True or False"),
    ],
)
def test_bad_reembed_arguments(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        Retriever(tmp_path / "db", **kwargs)
    assert not (tmp_path / "db").exists()


def test_a_damaged_identity_record_is_a_store_error_and_reembed_repairs_it(
    tmp_path: Path,
) -> None:
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
        r._sync.dense.collection.modify(
            metadata={**r._sync.dense.collection.metadata, "remy_embedder": "{"}
        )
    with pytest.raises(StoreError, match="damaged embedder record.*reembed=True"):
        Retriever(tmp_path / "db", embedder=TokenHashEmbedder())
    Retriever(tmp_path / "db", embedder=TokenHashEmbedder(), reembed=True).close()
    Retriever(tmp_path / "db", embedder=TokenHashEmbedder()).close()


# -- item 5: a store never chooses code to run -------------------------------------------


def _record_class(path: Path, target: str) -> None:
    _record_config(path, {"class": target})


def _record_config(path: Path, recorded_config: dict[str, Any]) -> None:
    """Make the collection at ``path`` record ``target`` as its embedder class, as a
    store copied from elsewhere could: its configuration edited in Chroma's SQLite file
    (not through chromadb, which would build the recorded embedder)."""
    with Retriever(path, embedder=TokenHashEmbedder()) as r:
        r.add(DOCS)
    SharedSystemClient.clear_system_cache()
    recorded = json.dumps(
        {"class": "remy_reliability_support:TokenHashEmbedder"}, separators=(",", ":")
    )
    with sqlite3.connect(path / "chroma.sqlite3") as db:
        rows = db.execute("SELECT id, config_json_str, schema_str FROM collections").fetchall()
        for cid, config, schema in rows:
            config, schema = (
                None
                if text is None
                else text.replace(recorded, json.dumps(recorded_config, separators=(",", ":")))
                for text in (config, schema)
            )
            db.execute(
                "UPDATE collections SET config_json_str = ?, schema_str = ? WHERE id = ?",
                (config, schema, cid),
            )
    db.close()
    SharedSystemClient.clear_system_cache()
    config = chromadb.PersistentClient(str(path)).get_collection("docs", embedding_function=None)
    assert config.configuration_json["embedding_function"]["config"] == recorded_config


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module that leaves a file behind if it is ever imported, and spies on os.abort
    and builtins.exit."""
    folder = tmp_path / "canary"
    folder.mkdir()
    mark = tmp_path / "imported"
    (folder / "remy_canary_mod.py").write_text(
        f"open({str(mark)!r}, 'w').close()\nclass Boom:\n    pass\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(folder))
    called: list[str] = []
    monkeypatch.setattr(os, "abort", lambda: called.append("abort"))
    monkeypatch.setattr(builtins, "exit", lambda *a: called.append("exit"))
    yield mark
    assert called == [], called
    assert not mark.exists(), "the recorded module was imported"
    assert "remy_canary_mod" not in sys.modules


@pytest.mark.parametrize("target", ["os:abort", "builtins:exit", "remy_canary_mod:Boom"])
def test_a_recorded_class_is_never_imported(tmp_path: Path, canary: Path, target: str) -> None:
    _record_class(tmp_path / "db", target)
    with pytest.raises(ModelLoadError) as caught:
        Retriever(tmp_path / "db")
    message = str(caught.value)
    assert repr(target) in message and "embedder=" in message and "--embedder" in message
    # Chroma's own reopen path builds a placeholder that refuses to embed.
    ef = RemyEmbeddingFunction.build_from_config({"class": target})
    with pytest.raises(ModelLoadError, match="not imported"):
        ef(["hello"])
    # With an explicit embedder the store opens and searches.
    with Retriever(tmp_path / "db", embedder=TokenHashEmbedder()) as r:
        assert r.search("brew mac", mode="hybrid", k=1)[0].id.startswith("mac")


def test_a_recorded_model_directory_naming_foreign_code_is_refused(
    tmp_path: Path, canary: Path
) -> None:
    """sentence-transformers before 6.0 imported any class a local modules.json named."""
    model = tmp_path / "shipped-model"
    model.mkdir()
    modules = [{"idx": 0, "name": "0", "path": "", "type": "remy_canary_mod.Boom"}]
    (model / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    _record_config(tmp_path / "db", {"model": str(model)})
    with pytest.raises(ModelLoadError, match="names code outside sentence-transformers"):
        Retriever(tmp_path / "db")


@pytest.mark.slow
def test_the_cli_survives_a_store_recording_os_abort(tmp_path: Path) -> None:
    _record_class(tmp_path / "db", "os:abort")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "remy_retriever.cli",
            "search",
            "brew",
            "--db",
            str(tmp_path / "db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "remy: error:" in proc.stderr and "'os:abort'" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- order of checks; bad embedder= --------------------------------------------------------


def test_a_model_that_cannot_load_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="/no/such/model"):
        Retriever(tmp_path / "s", embedder="/no/such/model")
    store = tmp_path / "s"
    assert not store.exists() or chromadb.PersistentClient(str(store)).list_collections() == []


def test_an_embedder_that_fails_creates_nothing(tmp_path: Path) -> None:
    class Broken(TokenHashEmbedder):
        def embed_query(self, text: str) -> np.ndarray:
            msg = "no GPU"
            raise RuntimeError(msg)

    with pytest.raises(ModelLoadError, match="failed to embed a probe text.*no GPU"):
        Retriever(tmp_path / "s", embedder=Broken())
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("bad", [5, object(), True, b"all-MiniLM-L6-v2", ["model"]])
def test_a_bad_embedder_is_an_invalid_input_error(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"embedder .* is not an embedder: pass a"):
        Retriever(tmp_path / "s", embedder=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "s").exists()


def test_identity_tolerates_float_noise_but_not_another_model() -> None:
    from remy_retriever.stores.identity import identify

    base = identify(TokenHashEmbedder())
    noisy = TokenHashEmbedder()
    rng = np.random.default_rng(0)
    jitter = rng.standard_normal(384).astype(np.float32) * 1e-3
    noisy.embed_documents = lambda texts: TokenHashEmbedder().embed_documents(texts) + jitter  # type: ignore[method-assign]
    assert identify(noisy).matches(base)
    assert not identify(SaltedHashEmbedder()).matches(base)
    restored = type(base).from_json(base.to_json(), where="test")
    assert restored.matches(base) and restored.similarity(base) > 0.99999
    assert len(base.to_json()) < 2500
