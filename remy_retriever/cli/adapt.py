"""``remy adapt --db PATH [--collection NAME]``: fine-tune the collection's embedder on
pairs mined from its own documents, keep it only if it finds held-out pairs better, and
re-embed the collection with it; ``--revert`` re-embeds with the base model again.

The steps, each printed: mine pairs (:mod:`~remy_retriever.models.adapt_pairs`), hold a
seeded share of the documents out, probe the cost of a training step and plan the steps
that fit ``--budget`` (:mod:`~remy_retriever.models.adapt_train`), train and save a new
model directory (``--output``; default ``DB.adapted/COLLECTION-SEED-TIME`` beside the
store), compare the held-out mean reciprocal rank of base and adapted model, and, when
the adapted one wins by ``--margin``, re-embed through ``Retriever(..., reembed=True)``:
under the writer lock, into a shadow collection that one metadata write then swaps in
with the new model's identity (its path and probe fingerprint), so an interrupted run
leaves the old vectors and model (:mod:`~remy_retriever.stores.reembed`). When it does not
win, the base model stays and the new directory is removed.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..models.adapt_pairs import MiningFilters, Passage, mine_pairs, split_pairs
from ..models.adapt_train import (
    TrainSettings,
    held_out_mrr,
    plan,
    probe,
    read_card,
    train,
)
from ..retriever import Retriever
from ..util.progress import show_progress
from .common import PROGRESS_HELP, add_store_flags, open_retriever, print_json, store_client

__all__ = ["add_parser", "run"]

#: The held-out mean-reciprocal-rank gain an adapted model needs to be kept.
MARGIN = 0.01
#: The share of the documents whose pairs are held out for that check.
HELD_OUT = 0.1


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``adapt`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "adapt", help="fine-tune the embedder on the collection's own text and re-embed"
    )
    add_store_flags(parser)
    parser.add_argument(
        "--budget", type=float, default=10.0, metavar="MINUTES", help="time bound (minutes)"
    )
    parser.add_argument(
        "--revert", action="store_true", help="re-embed with the base model the adapted one had"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of mining, split, training")
    parser.add_argument("--output", default=None, metavar="DIR", help="the new model directory")
    parser.add_argument(
        "--margin", type=float, default=MARGIN, help="held-out MRR gain needed to keep it"
    )
    parser.add_argument(
        "--held-out", type=float, default=HELD_OUT, help="share of documents held out"
    )
    parser.add_argument("--max-pairs", type=int, default=20000, help="pairs to mine at most")
    parser.add_argument("--per-document", type=int, default=4, help="pairs per document at most")
    parser.add_argument("--batch-size", type=int, default=32, help="pairs per training step")
    parser.add_argument(
        "--dry-run", action="store_true", help="train and check, but do not re-embed"
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help=PROGRESS_HELP
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def _backend(embedder: Any) -> str:
    backend = getattr(embedder, "backend", "torch")
    if backend == "onnx":
        return "onnx-int8" if getattr(embedder, "quantization", "none") == "int8" else "onnx"
    return "torch"


def _model_of(r: Retriever) -> str:
    model = getattr(r.embedder, "model_id", None)
    if not isinstance(model, str):
        msg = (
            f"the collection's embedder ({type(r.embedder).__name__}) is not a "
            "sentence-transformers model; remy adapt fine-tunes only those"
        )
        raise InvalidInputError(msg)
    return model


def _passages(r: Retriever) -> list[Passage]:
    ids = r.document_ids()
    out = []
    for lo in range(0, len(ids), 500):
        for doc_id, stored in r.get_documents(ids[lo : lo + 500]).items():
            doc = stored.document
            out.append(Passage(doc_id, doc.text, doc.title or ""))
    return out


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.json:
        print(text, flush=True)


def _reopen(args: argparse.Namespace, model: str, backend: str) -> tuple[float, int]:
    path, client = store_client(args)
    started = time.perf_counter()
    with Retriever(
        path,
        client=client,
        collection=args.collection,
        create=False,
        embedder=model,
        embedder_backend=backend,
        lexical_path=args.lexical_path,
        reembed=True,
    ) as r:
        count = r.count()
    return time.perf_counter() - started, count


def _default_output(args: argparse.Namespace) -> Path:
    if args.server is not None:
        msg = "with --server, pass --output DIR for the adapted model directory"
        raise InvalidInputError(msg)
    db = Path(args.db or "./remy_data").resolve()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return db.with_name(db.name + ".adapted") / f"{args.collection}-{args.seed}-{stamp}"


def _check_args(args: argparse.Namespace) -> None:
    if not args.budget > 0:
        msg = f"--budget {args.budget!r} must be a positive number of minutes (e.g. 10)"
        raise InvalidInputError(msg)
    if args.batch_size < 2:
        msg = f"--batch-size {args.batch_size} must be 2 or more (in-batch negatives)"
        raise InvalidInputError(msg)


def run(args: argparse.Namespace) -> int:
    """Run ``remy adapt``: prints each step, the plan, the held-out scores and what was
    kept."""
    _check_args(args)
    started = time.perf_counter()
    with open_retriever(args) as r:
        current, backend = _model_of(r), _backend(r.embedder)
        card = read_card(current)
        passages = [] if args.revert else _passages(r)
        chunks = r.count()
    if args.revert:
        return _revert(args, current, card, backend)
    base = str(card["base_model"]) if card else current
    filters = MiningFilters(
        per_document=args.per_document, max_pairs=args.max_pairs, seed=args.seed
    )
    mined = mine_pairs(passages, filters)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(mined.counts.items()))
    _say(args, f"{len(mined.pairs)} pairs from {len(passages)} documents ({kinds})")
    train_pairs, held = split_pairs(mined.pairs, args.held_out, seed=args.seed)
    if not held or len(train_pairs) < args.batch_size:
        msg = (
            f"only {len(mined.pairs)} pairs could be mined from {len(passages)} documents; "
            "remy adapt needs more text (or a smaller --batch-size)"
        )
        raise InvalidInputError(msg)
    settings = TrainSettings(batch_size=args.batch_size, seed=args.seed)
    output = Path(args.output) if args.output else _default_output(args)
    with tempfile.TemporaryDirectory(prefix="remy-adapt-probe-") as work:
        measured = probe(base, train_pairs, settings, Path(work))
    steps = plan(
        measured,
        pairs=len(train_pairs),
        held_out=len(held),
        chunks=chunks,
        budget_seconds=args.budget * 60,
        settings=settings,
        spent_seconds=time.perf_counter() - started,
    )
    _say(
        args,
        f"probe: {measured.step_seconds:.2f} s a step; plan: {steps.steps} steps, about "
        f"{steps.total_seconds / 60:.1f} min ({steps.train_seconds / 60:.1f} training, "
        f"{steps.reembed_seconds / 60:.1f} re-embedding {chunks} chunks; budget "
        f"{args.budget:g} min)",
    )
    facts = train(
        base,
        train_pairs,
        output,
        steps=steps.steps,
        settings=settings,
        card={"mined": mined.to_dict(), "train_pairs": len(train_pairs), "held_out": len(held)},
        progress=show_progress(args.progress),
    )
    before, after = held_out_mrr(base, held), held_out_mrr(str(output), held)
    accepted = after >= before + args.margin
    result: dict[str, Any] = {
        "model": str(output.resolve()) if accepted else base,
        "base_model": base,
        "held_out_mrr_base": round(before, 4),
        "held_out_mrr_adapted": round(after, 4),
        "accepted": accepted,
        "steps": steps.steps,
        "train_seconds": facts["train_seconds"],
        "pairs": mined.to_dict(),
    }
    _say(args, f"held-out MRR: base {before:.4f}, adapted {after:.4f} (margin {args.margin:g})")
    if not accepted:
        shutil.rmtree(output, ignore_errors=True)
        _say(args, "not kept: the adapted model does not beat the base model; nothing changed")
    elif args.dry_run:
        _say(args, f"kept at {output} (--dry-run: the collection is not re-embedded)")
    else:
        seconds, count = _reopen(args, str(output.resolve()), backend)
        result["reembed_seconds"] = round(seconds, 1)
        _say(args, f"re-embedded {count} chunks with {output} in {seconds:.0f} s")
    if args.json:
        print_json(result)
    return 0


def _revert(
    args: argparse.Namespace, current: str, card: dict[str, Any] | None, backend: str
) -> int:
    if card is None:
        msg = (
            f"the collection's model {current!r} is not one remy adapt made; there is "
            "nothing to revert"
        )
        raise InvalidInputError(msg)
    base = str(card["base_model"])
    seconds, count = _reopen(args, base, backend)
    if args.json:
        print_json({"model": base, "reverted_from": current, "reembed_seconds": round(seconds, 1)})
    else:
        print(f"re-embedded {count} chunks with the base model {base} in {seconds:.0f} s")
    return 0
