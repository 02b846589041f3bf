"""Fine-tuning an embedder on mined pairs, for ``remy adapt``: a short probe, training
bounded by a time budget, a held-out check, and a saved model directory with its card.

Training is sentence-transformers' own trainer (``SentenceTransformerTrainer``) with
``MultipleNegativesRankingLoss``: each anchor's positive against the other positives
of its batch (in-batch negatives), batches without repeated texts, on the CPU, seeded.
Before it starts, :func:`probe` times a few steps on a throwaway copy of the model and
the encoding of a batch, and the number of steps is what fits the budget
(:func:`plan`), printed before the run.

Checkpoints go to ``OUTPUT.partial/checkpoints`` with the run's plan; a run started again
with the same plan (same pairs, seed and steps) resumes from the last checkpoint, any
other plan starts over. The finished model is written beside and renamed into place, so
``OUTPUT`` is either absent or complete. Its ``adapt.json`` (:data:`CARD_NAME`) records
the base model and its fingerprint, the pair kinds and counts, the filters, the steps,
the time, the seed and the held-out scores.

:func:`held_out_mrr` is the guard: the mean reciprocal rank of each held-out anchor's
positive among all the held-out positives, base model against adapted.

sentence-transformers, torch and ``datasets`` are imported inside the functions: this
module imports no model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, ModelLoadError
from .adapt_pairs import Pair
from .paths import resolve_model_path

__all__ = [
    "CARD_NAME",
    "Plan",
    "Probe",
    "TrainSettings",
    "fingerprint_dir",
    "held_out_mrr",
    "plan",
    "probe",
    "read_card",
    "train",
]

#: The adapted model's card, a JSON file in its directory.
CARD_NAME = "adapt.json"
_CARD_VERSION = 1


@dataclass(frozen=True)
class TrainSettings:
    """Batch size, learning rate, warm-up share, seed, steps timed by the probe, and the
    most passes over the pairs (``epochs``)."""

    batch_size: int = 32
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    seed: int = 0
    probe_steps: int = 3
    epochs: float = 1.0
    max_seq_length: int = 256


@dataclass(frozen=True)
class Probe:
    """Seconds one training step takes, and seconds to encode one text."""

    step_seconds: float
    encode_seconds: float


@dataclass(frozen=True)
class Plan:
    """The steps a run takes and the seconds it is expected to take (training, the
    held-out check and the re-embedding of ``chunks`` chunks)."""

    steps: int
    train_seconds: float
    check_seconds: float
    reembed_seconds: float

    @property
    def total_seconds(self) -> float:
        return self.train_seconds + self.check_seconds + self.reembed_seconds


def _load(model: str) -> Any:
    try:
        # lazy: torch loads with sentence-transformers, never at import
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        return SentenceTransformer(resolve_model_path(model), device="cpu")
    except Exception as exc:
        reason = " ".join(str(exc).split())[:300]
        msg = f"cannot load the model {model!r} to adapt it: {reason}"
        raise ModelLoadError(msg) from exc


def _loss(model: Any) -> Any:
    try:
        from sentence_transformers.sentence_transformer.losses import (  # lazy: torch
            MultipleNegativesRankingLoss,
        )
    except ImportError:  # sentence-transformers before 6
        from sentence_transformers.losses import (  # type: ignore[no-redef]  # lazy: torch
            MultipleNegativesRankingLoss,
        )
    return MultipleNegativesRankingLoss(model)


def _dataset(pairs: Sequence[Pair]) -> Any:
    try:
        from datasets import Dataset  # lazy: the [adapt] extra
    except ImportError as exc:
        msg = (
            "remy adapt needs the 'datasets' and 'accelerate' packages: pip install "
            "'remy-retriever[adapt]'"
        )
        raise ModelLoadError(msg) from exc
    return Dataset.from_dict(
        {"anchor": [p.anchor for p in pairs], "positive": [p.positive for p in pairs]}
    )


def _trainer(
    model: Any,
    pairs: Sequence[Pair],
    settings: TrainSettings,
    *,
    out: Path,
    steps: int,
    save_steps: int | None,
    progress: bool,
) -> Any:
    # lazy: torch and the trainer's dependencies
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.training_args import BatchSamplers  # lazy: torch

    args = SentenceTransformerTrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        warmup_steps=int(settings.warmup_ratio * steps),
        seed=settings.seed,
        data_seed=settings.seed,
        use_cpu=True,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        save_total_limit=1,
        logging_strategy="no",
        report_to=[],
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )
    return SentenceTransformerTrainer(
        model=model, args=args, train_dataset=_dataset(pairs), loss=_loss(model)
    )


def _run(trainer: Any, *, resume: bool = False) -> None:
    """Train; what the trainer prints goes to stderr (stdout may be ``--json``)."""
    with contextlib.redirect_stdout(sys.stderr):
        trainer.train(resume_from_checkpoint=True if resume else None)


def probe(base_model: str, pairs: Sequence[Pair], settings: TrainSettings, work: Path) -> Probe:
    """Time ``settings.probe_steps`` training steps on a throwaway copy of
    ``base_model`` (a run of one step subtracted, so the trainer's set-up is left out),
    and the encoding of a batch of positives."""
    model = _load(base_model)
    model.max_seq_length = min(model.max_seq_length or 512, settings.max_seq_length)
    sample = list(pairs[: settings.batch_size * (settings.probe_steps + 1)])
    if len(sample) < 2:
        msg = "too few pairs to adapt on: the collection needs more text"
        raise InvalidInputError(msg)
    timed = []
    for steps in (1, 1 + settings.probe_steps):  # the difference leaves the set-up out
        trainer = _trainer(
            model, sample, settings, out=work, steps=steps, save_steps=None, progress=False
        )
        started = time.perf_counter()
        _run(trainer)
        timed.append(time.perf_counter() - started)
    step = max(timed[1] - timed[0], 1e-3) / settings.probe_steps
    texts = [p.positive for p in sample[: settings.batch_size]]
    started = time.perf_counter()
    model.encode(texts, batch_size=settings.batch_size, show_progress_bar=False)
    encode = (time.perf_counter() - started) / len(texts)
    shutil.rmtree(work, ignore_errors=True)
    return Probe(step_seconds=step, encode_seconds=encode)


def plan(
    measured: Probe,
    *,
    pairs: int,
    held_out: int,
    chunks: int,
    budget_seconds: float,
    settings: TrainSettings,
    spent_seconds: float = 0.0,
) -> Plan:
    """The steps that fit ``budget_seconds`` once what the run has spent so far (reading,
    mining, the probe), the held-out check (two models over the held-out pairs, twice
    over) and the re-embedding of ``chunks`` are paid for, at most ``settings.epochs``
    passes over ``pairs``. :class:`InvalidInputError` naming a budget that would do when
    not one step fits."""
    check = 4 * held_out * measured.encode_seconds
    reembed = chunks * measured.encode_seconds
    room = budget_seconds - spent_seconds - check - reembed
    if room < measured.step_seconds:
        fixed = spent_seconds + check + reembed
        need = math.ceil((fixed + 100 * measured.step_seconds) / 60)
        msg = (
            f"--budget {budget_seconds / 60:g} min leaves no time to train: reading and the "
            f"probe took {spent_seconds / 60:.1f} min, and the held-out check and re-embedding "
            f"{chunks} chunks need about {(check + reembed) / 60:.1f} min more; pass "
            f"--budget {need} or more (about 100 steps of {measured.step_seconds:.1f} s)"
        )
        raise InvalidInputError(msg)
    most = max(1, math.ceil(settings.epochs * pairs / settings.batch_size))
    steps = max(1, min(most, int(room / measured.step_seconds)))
    return Plan(steps, steps * measured.step_seconds, check, reembed)


def _plan_key(base_model: str, pairs: Sequence[Pair], settings: TrainSettings, steps: int) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([base_model, asdict(settings), steps]).encode())
    for p in pairs:
        digest.update(f"{p.anchor}\x00{p.positive}\x01".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def train(
    base_model: str,
    pairs: Sequence[Pair],
    output: Path,
    *,
    steps: int,
    settings: TrainSettings,
    card: dict[str, Any],
    progress: bool = False,
) -> dict[str, Any]:
    """Train ``base_model`` on ``pairs`` for ``steps`` steps and save it at ``output``
    (with ``card`` and the run's facts in :data:`CARD_NAME`); returns the card."""
    if output.exists():
        msg = f"{str(output)!r} exists already; pass another --output or remove it"
        raise InvalidInputError(msg)
    partial = output.with_name(output.name + ".partial")
    checkpoints = partial / "checkpoints"
    key = _plan_key(base_model, pairs, settings, steps)
    marker = partial / "plan.json"
    resume = marker.is_file() and json.loads(marker.read_text())["key"] == key
    if not resume:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        marker.write_text(json.dumps({"key": key}))
    resume_from = resume and any(checkpoints.glob("checkpoint-*"))
    model = _load(base_model)
    model.max_seq_length = min(model.max_seq_length or 512, settings.max_seq_length)
    every = max(1, steps // 4)
    trainer = _trainer(
        model, pairs, settings, out=checkpoints, steps=steps, save_steps=every, progress=progress
    )
    started = time.perf_counter()
    _run(trainer, resume=bool(resume_from))
    seconds = time.perf_counter() - started
    staging = partial / "model"
    shutil.rmtree(staging, ignore_errors=True)
    model.save(str(staging))
    facts = {
        **card,
        "version": _CARD_VERSION,
        "base_model": base_model,
        "base_fingerprint": fingerprint_dir(Path(resolve_model_path(base_model))),
        "steps": steps,
        "resumed": bool(resume_from),
        "train_seconds": round(seconds, 1),
        "settings": asdict(settings),
        "loss": "MultipleNegativesRankingLoss (in-batch negatives)",
    }
    (staging / CARD_NAME).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
    os.replace(staging, output)
    shutil.rmtree(partial, ignore_errors=True)
    return facts


def read_card(model_dir: str) -> dict[str, Any] | None:
    """The card of an adapted model directory, or ``None`` for any other model."""
    path = Path(model_dir) / CARD_NAME
    if not path.is_file():
        return None
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        msg = f"the adapted model's card {str(path)!r} is unreadable ({exc})"
        raise ModelLoadError(msg) from exc
    return card if isinstance(card, dict) else None


def fingerprint_dir(model_dir: Path) -> str:
    """A sha256 over a model directory's weight and config files (names and bytes);
    ``""`` when ``model_dir`` is not a directory (a hub name)."""
    if not model_dir.is_dir():
        return ""
    digest = hashlib.sha256()
    for path in sorted(model_dir.rglob("*")):
        if path.is_file() and path.suffix in {".safetensors", ".bin", ".json", ".txt"}:
            if path.name == CARD_NAME:
                continue
            digest.update(str(path.relative_to(model_dir)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def held_out_mrr(model: str, pairs: Sequence[Pair], *, batch_size: int = 32) -> float:
    """The mean reciprocal rank of each pair's document among the held-out documents,
    a document scored by its best positive's cosine to the anchor, with ``model`` (a
    name or a directory)."""
    if not pairs:
        return 0.0
    encoder = _load(model)
    positives = sorted({(p.document_id, p.positive) for p in pairs})
    docs = sorted({d for d, _ in positives})
    column = {d: i for i, d in enumerate(docs)}
    owner = np.array([column[d] for d, _ in positives])
    kwargs = {"batch_size": batch_size, "normalize_embeddings": True, "show_progress_bar": False}
    vectors = np.asarray(encoder.encode([t for _, t in positives], **kwargs), dtype=np.float32)
    anchors = np.asarray(encoder.encode([p.anchor for p in pairs], **kwargs), dtype=np.float32)
    scores = anchors @ vectors.T
    best = np.full((len(pairs), len(docs)), -np.inf, dtype=np.float32)
    for j in range(len(docs)):
        best[:, j] = scores[:, owner == j].max(axis=1)
    target = np.array([best[i, column[p.document_id]] for i, p in enumerate(pairs)])
    ranks = 1 + (best > target[:, None]).sum(axis=1)
    return float(np.mean(1.0 / ranks))
