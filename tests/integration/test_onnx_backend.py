"""The ONNX Runtime embedder backends. The real MiniLM model, exported from the
bundled weights into a fresh cache (``REMY_ONNX_CACHE``), real Chroma, real
subprocesses racing for the first export, and no network anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from remy_retriever import Document, ModelLoadError, Retriever, SentenceTransformerEmbedder
from remy_retriever.models.embeddings import RemyEmbeddingFunction, resolve_model_path
from remy_retriever.models.onnx_embedder import OnnxEmbedder
from remy_retriever.models.onnx_export import CACHE_ENV
from remy_retriever.schema.records import EMBEDDER_KEY

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("filelock")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "install the agent on linux",
    "Homebrew: brew install remy on a Mac. " * 60,  # over 256 tokens: truncated alike
    "Ünïcödé, emoji 🎉 and CJK 漢字 in one line",
    "   leading and trailing spaces   ",
    "x",
]
DOCS = [
    Document(id="linux", text="# Linux\n\nInstall the agent on Linux with apt and systemd."),
    Document(id="mac", text="# macOS\n\nUse Homebrew: brew install remy on a Mac."),
    Document(id="billing", text="# Billing\n\nInvoices are sent monthly; refunds take days."),
]

#: Run first in each child: any attempt to reach the network fails loudly.
NO_NETWORK = """
import socket
def _refuse(*a, **k):
    raise OSError("network access in an offline test")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.getaddrinfo = _refuse
socket.create_connection = _refuse
"""


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh export cache for this module (so the export itself is exercised)."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(cache)
    yield cache
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(scope="module")
def torch_embedder(minilm_model: object) -> SentenceTransformerEmbedder:
    embedder = SentenceTransformerEmbedder()
    embedder._model = minilm_model
    return embedder


def test_fp32_onnx_vectors_agree_with_torch(
    onnx_cache: Path, torch_embedder: SentenceTransformerEmbedder
) -> None:
    onnx = OnnxEmbedder(batch_size=2)  # batches of mixed lengths: padding is masked
    docs_t, docs_o = torch_embedder.embed_documents(TEXTS), onnx.embed_documents(TEXTS)
    assert docs_o.shape == docs_t.shape == (len(TEXTS), 384)
    assert np.abs(docs_o - docs_t).max() <= 1e-5
    for text in TEXTS:
        diff = np.abs(onnx.embed_query(text) - torch_embedder.embed_query(text)).max()
        assert diff <= 1e-5, text
    assert onnx.count_tokens(TEXTS) == torch_embedder.count_tokens(TEXTS)
    assert onnx.max_tokens == torch_embedder.max_tokens == 256
    assert list(onnx_cache.glob("*/model-fp32.onnx")), "exported into REMY_ONNX_CACHE"


def test_serving_with_onnx_never_imports_torch(onnx_cache: Path) -> None:
    """Once exported, a process that opens the ONNX embedder and embeds imports neither
    torch nor transformers (start-up and memory of a server), with the network off."""
    OnnxEmbedder().embed_query("export first")  # the export (in this process) needs torch
    code = NO_NETWORK + (
        "import sys\n"
        "from remy_retriever import OnnxEmbedder\n"
        "v = OnnxEmbedder().embed_query('install the agent')\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "print(len(v), heavy)\n"
    )
    env = {**os.environ, CACHE_ENV: str(onnx_cache), "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "384 []"


def test_torch_and_fp32_onnx_are_one_embedder(
    tmp_path: Path, onnx_cache: Path, torch_embedder: SentenceTransformerEmbedder
) -> None:
    """A collection built with torch opens with the ONNX backend (and back), with the
    same hits; the records name the backend that built it."""
    with Retriever(tmp_path / "db", embedder=torch_embedder) as r:
        r.add(DOCS)
        expected = r.search("brew on a mac", mode="semantic", k=3)
        record = json.loads(r._sync.dense.collection.metadata[EMBEDDER_KEY])
        assert (record["backend"], record["quantization"]) == ("torch", "none")
    with Retriever(tmp_path / "db", embedder_backend="onnx") as r:
        assert isinstance(r.embedder, OnnxEmbedder)
        got = r.search("brew on a mac", mode="semantic", k=3)
        assert [h.id for h in got] == [h.id for h in expected]
        assert np.allclose([h.score for h in got], [h.score for h in expected], atol=1e-5)
        r.add([Document(id="windows", text="# Windows\n\nRun the MSI installer.")])
    with Retriever(tmp_path / "db") as r:  # the record (torch) decides
        assert isinstance(r.embedder, SentenceTransformerEmbedder)
        assert r.search("msi installer windows", mode="semantic", k=1)[0].id.startswith("win")


def test_an_int8_store_refuses_a_torch_or_fp32_query_embedder(
    tmp_path: Path, onnx_cache: Path, torch_embedder: SentenceTransformerEmbedder
) -> None:
    path = tmp_path / "db"
    with Retriever(path, embedder_backend="onnx-int8") as r:
        r.add(DOCS)
        record = json.loads(r._sync.dense.collection.metadata[EMBEDDER_KEY])
        assert (record["backend"], record["quantization"]) == ("onnx", "int8")
        config = r._sync.dense.collection.configuration_json["embedding_function"]["config"]
        assert (config["backend"], config["quantization"]) == ("onnx", "int8")
    # The int8 vectors are close to torch's, yet the store refuses torch: by the record.
    int8 = OnnxEmbedder(quantization="int8")
    cosine = float(np.dot(int8.embed_query(TEXTS[0]), torch_embedder.embed_query(TEXTS[0])))
    assert 0.95 < cosine < 0.99999
    for other in (
        {"embedder": torch_embedder},
        {"embedder_backend": "torch"},
        {"embedder_backend": "onnx"},
    ):
        with pytest.raises(ModelLoadError, match=r"int8 weights.*none.*onnx-int8"):
            Retriever(path, **other)  # type: ignore[arg-type]
    # The record rebuilds the int8 embedder, offline; so does plain chromadb.
    with Retriever(path) as r:
        assert isinstance(r.embedder, OnnxEmbedder)
        assert r.embedder.quantization == "int8"
        assert r.search("brew on a mac", mode="semantic", k=1)[0].id.startswith("mac")
    rebuilt = RemyEmbeddingFunction.build_from_config(config).embedder
    assert isinstance(rebuilt, OnnxEmbedder)
    assert rebuilt.quantization == "int8"


_CHILD = """
import json, sys, time
from pathlib import Path
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
import onnxruntime, torch, transformers  # the slow imports, before the start line
from remy_retriever.models.onnx_export import ensure_exported
from remy_retriever.models.onnx_embedder import OnnxEmbedder
from remy_retriever.models.embeddings import resolve_model_path
ready.touch()
while not go.exists():
    time.sleep(0.01)
result = ensure_exported(Path(resolve_model_path(None)), "int8")
vector = OnnxEmbedder(quantization="int8").embed_query("install the agent on linux")
print(json.dumps({"path": str(result.path), "exported": result.exported,
                  "vector": [float(x) for x in vector]}))
"""


def test_two_processes_racing_for_the_first_export_share_one_file(tmp_path: Path) -> None:
    """Both children start the export at the same moment into an empty cache: one
    exports (fp32, then int8), the other waits on the lock and uses that file; no
    partial or temporary file is left, and the network is never touched."""
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        CACHE_ENV: str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    go = tmp_path / "go"
    children = []
    for i in range(2):
        ready = tmp_path / f"ready-{i}"
        proc = subprocess.Popen(
            [sys.executable, "-c", NO_NETWORK + _CHILD, str(ready), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        children.append((proc, ready))
    deadline = time.monotonic() + 300
    while not all(ready.exists() for _, ready in children):
        assert all(p.poll() is None for p, _ in children), [p.stderr.read() for p, _ in children]  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the children never got ready"
        time.sleep(0.05)
    go.touch()
    results = []
    for proc, _ in children:
        out, err = proc.communicate(timeout=500)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(r["exported"] for r in results) == [False, True]
    assert results[0]["path"] == results[1]["path"]
    assert np.allclose(results[0]["vector"], results[1]["vector"], atol=1e-6)
    files = sorted(p.name for p in Path(results[0]["path"]).parent.iterdir())
    assert files == [".export.lock", "model-fp32.onnx", "model-int8-r2.onnx", "source.json"]
    # What they made is what this process would make: the same vectors.
    os.environ[CACHE_ENV], before = str(cache), os.environ.get(CACHE_ENV)
    try:
        assert resolve_model_path(None)
        here = OnnxEmbedder(quantization="int8").embed_query("install the agent on linux")
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV)
        else:
            os.environ[CACHE_ENV] = before
    assert np.allclose(here, results[0]["vector"], atol=1e-6)


def test_int8_keeps_the_feed_forward_output_projections_fp32(onnx_cache: Path) -> None:
    """The int8 recipe: every weight MatMul is quantized but the six feed-forward output
    projections (their GELU input has outliers that one dynamic activation scale cannot
    hold; quantizing them cost SciFact 0.0065 nDCG@10, benchmarks/README.md section 8)."""
    import onnx

    from remy_retriever.models.onnx_export import ensure_exported

    model_dir = Path(resolve_model_path(None))
    fp32 = onnx.load(str(ensure_exported(model_dir, "none").path))
    int8 = onnx.load(str(ensure_exported(model_dir, "int8").path))
    ffn_out = sorted(
        n.name for n in fp32.graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name
    )
    ffn_out = [n for n in ffn_out if "/attention/" not in n]
    assert len(ffn_out) == 6, ffn_out  # one per layer of MiniLM-L6
    kept = {n.name for n in int8.graph.node if n.op_type == "MatMul"}
    assert set(ffn_out) <= kept
    quantized = [
        n for n in int8.graph.node if n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul")
    ]
    # Query, key, value, attention output and feed-forward input in each of 6 layers.
    assert len(quantized) == 6 * 5, sorted(n.op_type for n in int8.graph.node)


def test_cli_embedder_backend_builds_and_guards_an_int8_store(
    tmp_path: Path, onnx_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from remy_retriever.cli import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for doc in DOCS:
        (corpus / f"{doc.id}.md").write_text(doc.text, encoding="utf-8")
    db = str(tmp_path / "db")
    flags = ["--db", db, "--no-progress"]
    assert main(["ingest", str(corpus), *flags, "--embedder-backend", "onnx-int8"]) == 0
    capsys.readouterr()
    # The record decides when no backend is named, and the int8 store answers.
    assert main(["search", "brew on a mac", "--db", db, "--mode", "semantic", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["citation"]["documentId"] == "mac.md"
    # Naming another backend is refused, with the fix.
    code = main(["search", "brew", "--db", db, "--embedder-backend", "torch"])
    assert code == 2
    err = capsys.readouterr().err
    assert "onnx-int8" in err and "int8 weights" in err
    with pytest.raises(SystemExit) as exc:  # argparse: an unknown backend, with the choices
        main(["search", "brew", "--db", db, "--embedder-backend", "float16"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--embedder-backend" in err and "'float16'" in err and "onnx-int8" in err


def test_an_int8_vector_does_not_depend_on_its_batch(onnx_cache: Path) -> None:
    """int8 runs one text at a time by default: a document's vector is the same alone,
    beside a long outlier text, and as a query (dynamic quantization would otherwise
    share one activation scale across the batch)."""
    int8 = OnnxEmbedder(quantization="int8")
    assert int8.batch_size == 1
    alone = int8.embed_documents([TEXTS[0]])[0]
    batched = int8.embed_documents([TEXTS[1], TEXTS[0], TEXTS[2]])[1]
    assert np.array_equal(alone, batched)
    assert np.allclose(alone, int8.embed_query(TEXTS[0]), atol=1e-6)
    # Batches of 32 share a scale: the same text comes out differently beside others,
    # which is what the default avoids.
    shared = OnnxEmbedder(quantization="int8", batch_size=32)
    assert not np.array_equal(
        shared.embed_documents([TEXTS[0]])[0],
        shared.embed_documents([TEXTS[1], TEXTS[0], TEXTS[2]])[1],
    )
    assert OnnxEmbedder().batch_size == 32


#: Embeds one query through the default ONNX backend (int8), then prints a marker.
_FIRST_USE = """
from remy_retriever import OnnxEmbedder
OnnxEmbedder(quantization="int8").embed_query("install the agent on linux")
print("EMBEDDED")
"""


def test_the_first_onnx_export_says_what_it_does_and_where_once(tmp_path: Path) -> None:
    """The one-time export used to show only a progress bar and
    onnxruntime's "Please consider to run pre-processing before quantization", which
    reads like an error. Now one line says what is exported and where it is cached, the
    hint is gone, and a second process, loading from the cache, says nothing."""
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        CACHE_ENV: str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    runs = [
        subprocess.run(
            [sys.executable, "-c", NO_NETWORK + _FIRST_USE],
            env=env,
            capture_output=True,
            text=True,
            timeout=500,
            check=False,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0 and "EMBEDDED" in run.stdout, run.stderr[-3000:]
    first, second = (run.stderr for run in runs)
    lines = [line for line in first.splitlines() if "to ONNX" in line]
    assert len(lines) == 1, first[-3000:]
    assert "once for this machine" in lines[0] and "int8" in lines[0]
    assert str(cache) in lines[0] and CACHE_ENV in lines[0]
    assert "pre-processing before quantization" not in first, first[-3000:]
    assert "WARNING:root" not in first
    assert "to ONNX" not in second, second[-3000:]
