"""The ONNX export cache: a sentence-transformers model directory exported once per
machine to ONNX (fp32), and dynamically quantized to int8 from that.

Why not sentence-transformers' own ``backend="onnx"``: it runs through ``optimum-onnx``,
which requires ``transformers<4.58``; installing it downgrades transformers 5 to 4.57 and
huggingface-hub 2 to 0.36 under sentence-transformers 6.2, which declares
``transformers>=5`` (``pip check`` then fails), and ``pip install
sentence-transformers[onnx]`` resolves to sentence-transformers 5.7 instead. So the
export is ``torch.onnx.export`` (torch is already there for the torch backend), the
runtime is ``onnxruntime`` itself, and int8 is ``onnxruntime.quantization.quantize_dynamic``
(which needs the ``onnx`` package): the ``remy-retriever[onnx]`` extra adds only
``onnxruntime``, ``onnx`` and ``filelock`` to the existing stack.

The exported graph holds the whole sentence-transformers pipeline (transformer, pooling,
normalisation), so serving needs onnxruntime and tokenizers, not torch.

Cache: ``$REMY_ONNX_CACHE`` if set, else ``$XDG_CACHE_HOME/remy-retriever/onnx`` (default
``~/.cache/remy-retriever/onnx``); one folder per model directory and exporter version,
keyed by the model files' paths, sizes and modification times. Two processes exporting at
once: a file lock (``filelock``) serialises them, the exporter writes to a temporary
file beside the target and renames it into place (atomic on one file system), and the
second process finds the file done when it gets the lock. A reader never sees a partial
file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, ModelLoadError

__all__ = [
    "CACHE_ENV",
    "QUANTIZATIONS",
    "ExportedModel",
    "cache_root",
    "ensure_exported",
    "read_pipeline",
]

_log = logging.getLogger(__name__)

#: Environment variable naming the export cache directory.
CACHE_ENV = "REMY_ONNX_CACHE"
#: The quantizations the cache makes: "none" (fp32, the model's own numbers) and "int8"
#: (dynamic quantization of the weights; activations quantized per batch at run time).
QUANTIZATIONS = ("none", "int8")
#: Bumped when the exported graph changes, so that old exports are not reused.
_EXPORTER_VERSION = 2
_OPSET = 17
#: The int8 file, named by its recipe (:func:`_quantize`), so a recipe change never
#: reuses an older int8 export from the cache.
_INT8_FILE = "model-int8-r2.onnx"
#: Files whose change means a new export (the weights in whichever format they come).
_KEY_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "model.safetensors",
    "pytorch_model.bin",
)
#: How long a process waits for another one's export (seconds).
LOCK_TIMEOUT = 900.0


@dataclass(frozen=True)
class Pipeline:
    """What a sentence-transformers model directory does after the transformer:
    ``pooling`` ("mean" or "cls"), ``normalize``, and ``max_seq_length``."""

    pooling: str
    normalize: bool
    max_seq_length: int


@dataclass(frozen=True)
class ExportedModel:
    """An exported model file and whether this call made it (False: it was cached)."""

    path: Path
    exported: bool


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "remy-retriever" / "onnx"


def read_pipeline(model_dir: Path) -> Pipeline:
    """Check that ``model_dir`` is a sentence-transformers model this backend runs
    (Transformer -> Pooling (mean or CLS) -> optional Normalize) and read its settings."""
    where = f"the model directory {str(model_dir)!r}"
    try:
        modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        paths = [str(m.get("path", "")) for m in modules]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = (
            f"{where} has no readable modules.json ({exc}); the ONNX backend needs a local "
            "sentence-transformers model directory, or use embedder_backend='torch'"
        )
        raise ModelLoadError(msg) from exc
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        msg = (
            f"{where} is a pipeline of {kinds}; the ONNX backend runs Transformer -> Pooling "
            "[-> Normalize] only: use embedder_backend='torch' for this model"
        )
        raise ModelLoadError(msg)
    try:
        pooling_cfg = json.loads((model_dir / paths[1] / "config.json").read_text("utf-8"))
        st_cfg_path = model_dir / "sentence_bert_config.json"
        st_cfg = json.loads(st_cfg_path.read_text("utf-8")) if st_cfg_path.is_file() else {}
    except (OSError, ValueError) as exc:
        msg = f"{where} has an unreadable pooling or sentence-transformers config ({exc})"
        raise ModelLoadError(msg) from exc
    modes = [k for k, v in pooling_cfg.items() if k.startswith("pooling_mode_") and v is True]
    known = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
    if len(modes) != 1 or modes[0] not in known:
        msg = (
            f"{where} pools with {modes}; the ONNX backend supports mean or CLS pooling "
            "only: use embedder_backend='torch' for this model"
        )
        raise ModelLoadError(msg)
    return Pipeline(
        pooling=known[modes[0]],
        normalize=len(kinds) == 3,
        max_seq_length=int(st_cfg.get("max_seq_length") or 512),
    )


def _cache_dir(model_dir: Path) -> Path:
    digest = hashlib.sha256(f"v{_EXPORTER_VERSION}|{model_dir.resolve()}".encode())
    for name in _KEY_FILES:
        file = model_dir / name
        if file.is_file():
            st = file.stat()
            digest.update(f"|{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_dir.name)[:40]
    return cache_root() / f"{safe}-{digest.hexdigest()[:16]}"


def ensure_exported(model_dir: Path, quantization: str) -> ExportedModel:
    """The ONNX file for ``model_dir`` at ``quantization``, exported (and quantized) on
    first use and cached; safe when several processes ask at once."""
    if quantization not in QUANTIZATIONS:
        msg = f"quantization {quantization!r} is not one of {', '.join(QUANTIZATIONS)}"
        raise InvalidInputError(msg)
    pipeline = read_pipeline(model_dir)
    folder = _cache_dir(model_dir)
    target = folder / ("model-fp32.onnx" if quantization == "none" else _INT8_FILE)
    if target.is_file():
        return ExportedModel(target, exported=False)
    try:
        from filelock import FileLock, Timeout  # lazy: the [onnx] extra
    except ImportError as exc:
        msg = "the ONNX backend needs the onnx extra: pip install 'remy-retriever[onnx]'"
        raise ModelLoadError(msg) from exc
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / ".export.lock"), timeout=LOCK_TIMEOUT):
            if target.is_file():  # another process finished it while we waited
                return ExportedModel(target, exported=False)
            fp32 = folder / "model-fp32.onnx"
            _log.warning(
                "exporting the embedding model %s to ONNX%s for ONNX Runtime, once for this "
                "machine: this takes a while; later runs load it from %s (%s moves the cache)",
                model_dir.name,
                " and quantizing it to int8" if quantization == "int8" else "",
                folder,
                CACHE_ENV,
            )
            if not fp32.is_file():
                _atomic(fp32, lambda tmp: _export(model_dir, pipeline, tmp))
            if quantization == "int8":
                _atomic(target, lambda tmp: _quantize(fp32, tmp))
            (folder / "source.json").write_text(
                json.dumps({"model_dir": str(model_dir), "exporter": _EXPORTER_VERSION}),
                encoding="utf-8",
            )
    except Timeout as exc:
        msg = (
            f"waited {LOCK_TIMEOUT:.0f} s for another process exporting {model_dir.name} to "
            f"ONNX in {folder}; if none is running, delete {folder / '.export.lock'}"
        )
        raise ModelLoadError(msg) from exc
    except OSError as exc:
        msg = (
            f"cannot write the ONNX export cache at {folder} ({exc}); point "
            f"{CACHE_ENV} at a writable directory"
        )
        raise ModelLoadError(msg) from exc
    return ExportedModel(target, exported=True)


def _atomic(target: Path, write: Any) -> None:
    """Have ``write(tmp_path)`` make a file, then rename it to ``target`` (atomic)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _export(model_dir: Path, pipeline: Pipeline, out: Path) -> None:
    """Trace transformer + pooling + normalisation into one ONNX graph whose output is
    the sentence embedding."""
    try:
        # lazy: only the one-time export needs torch and transformers
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        msg = f"exporting to ONNX needs torch and transformers ({exc})"
        raise ModelLoadError(msg) from exc

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()
    inputs = ["input_ids", "attention_mask"]
    if "token_type_ids" in model.forward.__code__.co_varnames:
        inputs.append("token_type_ids")

    class SentenceGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *args: Any) -> Any:
            named = dict(zip(inputs, args))
            hidden = self.inner(**named).last_hidden_state
            if pipeline.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = named["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            if pipeline.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
            return pooled

    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in inputs)
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    # The tracer warns that transformers' mask code turns a padding-length check into a
    # constant: in an encoder the key length always equals the mask's, so that constant
    # (nothing to pad) holds for every shape. The agreement test runs batches of mixed
    # lengths, up to the truncation limit, against torch.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceGraph(),
            example,
            str(out),
            input_names=inputs,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=_OPSET,
            dynamo=False,  # the TorchScript exporter: no onnxscript, dynamic axes as given
            external_data=False,
        )


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantization of the weight matrices: signed int8 weights with one
    scale per output channel, activations quantized per batch at run time. Only MatMuls
    with a constant weight are quantized: quantizing the attention products (activation
    by activation) too, or one scale per matrix, moved MiniLM's vectors much further from
    the fp32 ones.

    The feed-forward output projections stay fp32 (:func:`_fp32_matmuls`): their input
    is the GELU output, whose few large values stretch the one activation scale a
    dynamic quantization gets per batch, so every small value loses its precision; with
    them quantized the search quality fell outside the embedder target, without them it
    stays inside. Keeping them fp32 leaves part of the weight-matrix work in fp32. The
    recipes tried and their numbers are in the int8 record under docs/decisions/."""
    try:
        import onnx  # lazy: [onnx]
        from onnxruntime.quantization import QuantType, quantize_dynamic  # lazy: [onnx]
    except ImportError as exc:
        msg = (
            f"int8 quantization needs onnxruntime and onnx ({exc}): "
            "pip install 'remy-retriever[onnx]'"
        )
        raise ModelLoadError(msg) from exc
    with _quiet_quantizer():
        _quantize_dynamic(
            quantize_dynamic, QuantType, fp32, out, onnx.load(str(fp32), load_external_data=False)
        )


class _PreprocessingHint(logging.Filter):
    """Drops onnxruntime's "Please consider to run pre-processing before quantization"
    advice: the pre-processing it names (shape inference, graph optimisation) is what
    the runtime does when it loads the model, and the line reads like an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


@contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """While quantizing: filter the hint out of the root logger, where onnxruntime logs
    it, and give that logger a handler so its ``logging.warning`` does not configure
    logging for the whole process (``basicConfig``) as a side effect."""
    root = logging.getLogger()
    hint, placeholder = _PreprocessingHint(), logging.NullHandler()
    root.addFilter(hint)
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)
        root.removeFilter(hint)


def _quantize_dynamic(quantize_dynamic: Any, qtype: Any, fp32: Path, out: Path, model: Any) -> None:
    quantize_dynamic(
        str(fp32),
        str(out),
        weight_type=qtype.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Gemm"],
        nodes_to_exclude=_fp32_matmuls(model),
        extra_options={"MatMulConstBOnly": True},
    )


def _fp32_matmuls(model: Any) -> list[str]:
    """The feed-forward output projections of a BERT-style encoder (node names ending in
    ``output/dense/MatMul`` outside the attention block), kept fp32 by :func:`_quantize`."""
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and node.name.endswith("/output/dense/MatMul")
        and "/attention/" not in node.name
    ]
