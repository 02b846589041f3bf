"""Backend names, what the identity record says about
quantization, the query-vector LRU and which model directories the ONNX backend takes.
No model is loaded here (the real-model tests are tests/integration/test_onnx_backend.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from remy_retriever import InvalidInputError, ModelLoadError
from remy_retriever.models.embeddings import (
    BACKENDS,
    check_backend,
    embedder_from_config,
    resolve_embedder,
)
from remy_retriever.models.onnx_embedder import OnnxEmbedder
from remy_retriever.models.onnx_export import read_pipeline
from remy_retriever.search.query_cache import QueryVectorCache
from remy_retriever.stores.identity import EmbedderIdentity, check_identity

RNG = np.random.default_rng(7)
DOC = tuple(float(x) for x in RNG.standard_normal(8))
QUERY = tuple(float(x) for x in RNG.standard_normal(8))


def identity(backend: str = "torch", quantization: str = "none") -> EmbedderIdentity:
    return EmbedderIdentity("m", 8, DOC, QUERY, backend=backend, quantization=quantization)


# -- backend names ---------------------------------------------------------------------


def test_backend_names_are_checked() -> None:
    assert BACKENDS == ("torch", "onnx", "onnx-int8")
    for name in (*BACKENDS, None):
        assert check_backend(name) == name
    for bad in ("ONNX", "int8", "", 3, ["onnx"]):
        with pytest.raises(InvalidInputError, match=r"embedder_backend .* is not one of"):
            check_backend(bad)


def test_a_backend_with_an_embedder_object_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="embedder_backend='onnx'.*drop one"):
        resolve_embedder(OnnxEmbedder(), "onnx")


def test_onnx_embedder_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="quantization 'int4'"):
        OnnxEmbedder(quantization="int4")
    for name in ("ingest_threads", "query_threads"):
        for bad in (0, -1, 1.5, True, "2"):
            with pytest.raises(InvalidInputError, match=rf"{name} must be an int from 1"):
                OnnxEmbedder(**{name: bad})  # type: ignore[arg-type]
    emb = OnnxEmbedder("default", quantization="int8", query_prompt="q: ")
    assert emb.config() == {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "backend": "onnx",
        "quantization": "int8",
        "query_prompt": "q: ",
    }


def test_the_record_rebuilds_the_backend_it_names() -> None:
    cfg = {"model": "all-MiniLM-L6-v2", "backend": "onnx", "quantization": "int8"}
    rebuilt = embedder_from_config(cfg)
    assert isinstance(rebuilt, OnnxEmbedder)
    assert rebuilt.quantization == "int8"
    with pytest.raises(ModelLoadError, match="backend 'tensorrt'.*does not know"):
        embedder_from_config({"model": "all-MiniLM-L6-v2", "backend": "tensorrt"})
    with pytest.raises(ModelLoadError, match="quantization 'int4'"):
        embedder_from_config({"model": "m", "backend": "onnx", "quantization": "int4"})


# -- identity --------------------------------------------------------------------------


def test_the_backend_does_not_decide_a_match_and_the_quantization_does() -> None:
    assert identity("torch").matches(identity("onnx"))
    assert not identity("onnx", "int8").matches(identity("torch"))
    assert not identity("torch").matches(identity("onnx", "int8"))
    with pytest.raises(ModelLoadError, match=r"int8 weights.*embedder_backend='onnx-int8'"):
        check_identity(identity("onnx", "int8"), None, identity("torch"), where="c")
    check_identity(identity("onnx"), None, identity("torch"), where="c")  # no error


def test_the_record_keeps_backend_and_quantization_and_old_records_read_as_torch() -> None:
    record = identity("onnx", "int8").to_json()
    data = json.loads(record)
    assert (data["backend"], data["quantization"]) == ("onnx", "int8")
    back = EmbedderIdentity.from_json(record, where="c")
    assert (back.backend, back.quantization) == ("onnx", "int8")
    del data["backend"], data["quantization"]  # a record from before issue #18
    old = EmbedderIdentity.from_json(json.dumps(data), where="c")
    assert (old.backend, old.quantization) == ("", "none")
    assert old.matches(identity("torch"))
    assert identity("onnx", "int8").key != identity("onnx").key


# -- the query-vector cache ------------------------------------------------------------


def test_the_query_cache_is_an_lru_keyed_by_identity() -> None:
    cache = QueryVectorCache(size=2)
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return np.full(3, float(len(calls)), dtype=np.float32)

    a = cache.get_or_embed("id1", "q", embed)
    assert cache.get_or_embed("id1", "q", embed) is a
    b = cache.get_or_embed("id2", "q", embed)  # another embedder: its own vector
    assert calls == ["q", "q"] and not np.array_equal(a, b)
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 5.0
    cache.get_or_embed("id1", "q", embed)  # touch: id2 is now the oldest
    cache.get_or_embed("id1", "other", embed)
    assert len(cache) == 2
    cache.get_or_embed("id2", "q", embed)
    assert calls == ["q", "q", "other", "q"], "id2 was evicted, id1 kept"
    assert (cache.hits, cache.misses) == (2, 4)


def test_no_identity_or_size_zero_is_not_cached() -> None:
    cache = QueryVectorCache(size=0)
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return np.zeros(2, dtype=np.float32)

    cache.get_or_embed("id", "q", embed)
    cache.get_or_embed("id", "q", embed)
    QueryVectorCache().get_or_embed(None, "q", embed)
    assert calls == ["q", "q", "q"]


def test_the_query_cache_is_thread_safe() -> None:
    cache = QueryVectorCache(size=8)

    def work(n: int) -> None:
        for i in range(300):
            text = f"q{(i * 7 + n) % 20}"
            got = cache.get_or_embed("id", text, lambda t: np.array([float(t[1:])]))
            assert got[0] == float(text[1:])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 8


# -- which model directories the ONNX backend runs --------------------------------------


def _model_dir(tmp_path: Path, modules: list[str], pooling: dict[str, bool]) -> Path:
    listing = [
        {"idx": i, "name": str(i), "path": ["", "1_Pooling", "2_Normalize"][i], "type": t}
        for i, t in enumerate(modules)
    ]
    (tmp_path / "modules.json").write_text(json.dumps(listing))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    return tmp_path


ST = "sentence_transformers.models."


def test_read_pipeline_takes_mean_or_cls_pooling(tmp_path: Path) -> None:
    path = _model_dir(
        tmp_path,
        [ST + "Transformer", ST + "Pooling", ST + "Normalize"],
        {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False},
    )
    pipeline = read_pipeline(path)
    assert (pipeline.pooling, pipeline.normalize, pipeline.max_seq_length) == ("mean", True, 128)


@pytest.mark.parametrize(
    ("modules", "pooling", "message"),
    [
        ([ST + "Transformer", ST + "Pooling", ST + "Dense"], {}, "Transformer -> Pooling"),
        (
            [ST + "Transformer", ST + "Pooling"],
            {"pooling_mode_max_tokens": True},
            "mean or CLS pooling",
        ),
    ],
)
def test_read_pipeline_refuses_what_it_cannot_run(
    tmp_path: Path, modules: list[str], pooling: dict[str, bool], message: str
) -> None:
    path = _model_dir(tmp_path, modules, pooling)
    with pytest.raises(ModelLoadError, match=rf"{message}.*embedder_backend='torch'"):
        read_pipeline(path)
    with pytest.raises(ModelLoadError, match="no readable modules.json"):
        read_pipeline(tmp_path / "nowhere")


def test_thread_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMY_ONNX_INGEST_THREADS", raising=False)
    monkeypatch.delenv("REMY_ONNX_QUERY_THREADS", raising=False)
    plain = OnnxEmbedder()
    assert (plain.ingest_threads, plain.query_threads) == (None, 1)  # None: every core
    monkeypatch.setenv("REMY_ONNX_INGEST_THREADS", "3")
    monkeypatch.setenv("REMY_ONNX_QUERY_THREADS", "2")
    assert (OnnxEmbedder().ingest_threads, OnnxEmbedder().query_threads) == (3, 2)
    explicit = OnnxEmbedder(ingest_threads=1, query_threads=4)
    assert (explicit.ingest_threads, explicit.query_threads) == (1, 4)
    monkeypatch.setenv("REMY_ONNX_QUERY_THREADS", "two")
    with pytest.raises(InvalidInputError, match="REMY_ONNX_QUERY_THREADS='two' must be an int"):
        OnnxEmbedder()
