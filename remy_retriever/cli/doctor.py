"""``remy doctor``: check (and with ``--repair`` fix) drift between Chroma and the lexical
index, the dense reachability of its chunks, and between the documents and the memories
the memory rule makes from them. Exit code 0 when in sync or repaired, 1 when drift was
found and left."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..retriever import DOCTOR_SAMPLE, Retriever, list_collections
from .common import add_store_flags, open_retriever, print_json, require_collection, store_client

__all__ = ["add_parser", "run"]

#: The memory collection ``remy serve`` and ``remy mcp`` pair with the documents.
DEFAULT_MEMORY_COLLECTION = "memories"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``doctor`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "doctor", help="check (and --repair) drift between the two indexes"
    )
    add_store_flags(parser)
    parser.add_argument("--repair", action="store_true", help="fix what is found")
    parser.add_argument(
        "--full",
        action="store_true",
        help="check the dense reachability of every chunk, not a sample",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=DOCTOR_SAMPLE,
        metavar="N",
        help="chunks whose dense reachability is checked, half of them the newest "
        "(0: skip the check; default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--memory-collection",
        default=None,
        metavar="NAME",
        help=(
            "also check the memories made from --collection's documents in this collection "
            f"(default: {DEFAULT_MEMORY_COLLECTION!r}, when remy serve or remy mcp paired "
            "it with --collection)"
        ),
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``remy doctor``: prints the report (or its JSON); returns the exit code."""
    with open_retriever(args) as r:
        report = r.doctor(repair=args.repair, full=args.full, sample=args.sample)
        memory, memory_note = _check_memories(args, r)
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    if memory is not None:
        data["memories"] = memory
    if args.json:
        print_json(data, ascii_only=True)
    else:
        print(f"chunks in Chroma: {report.chunks}; in the lexical index: {report.lexical_chunks}")
        print(f"dense reachability checked for {report.reachability_checked} chunks")
        for key, value in data.items():
            if isinstance(value, (list, tuple)) and value:
                shown = ", ".join(map(str, value[:10])) + (" ..." if len(value) > 10 else "")
                print(f"{key.replace('_', ' ')}: {len(value)} ({shown})")
        if report.ok:
            state = "ok"
        elif report.repaired:
            state = "repaired" if report.fixed else "repair incomplete"
        else:
            state = "drift"
        print(f"status: {state}")
        _print_memories(memory, memory_note)
    fine = report.fixed
    if memory is not None:
        fine = fine and (memory["ok"] or memory["repaired"])
    return 0 if fine else 1


# -- the memory rule's consistency (documents against their memories) --------------------


def _check_memories(args: argparse.Namespace, r: Retriever) -> tuple[dict[str, Any] | None, str]:
    """The memory report as a dict (``None`` when not checked, with the reason). An
    explicit ``--memory-collection`` is checked against ``--collection``; without it,
    only the default memory collection, and only if it was opened paired with
    ``--collection`` (else its memories would all look orphaned)."""
    # lazy: the memory package is needed only when a memory collection is checked.
    from ..memory import LinkedDocuments, MemoryStore
    from ..memory.journal import is_paired

    path, client = store_client(args)
    name = args.memory_collection
    if name is None:
        name = DEFAULT_MEMORY_COLLECTION
        if name not in list_collections(path, client=client):
            return None, f"memories: not checked (no collection {name!r})"
        if not is_paired(r, name):
            return None, (
                f"memories: not checked ({name!r} was never opened as the memories of "
                f"{r.collection!r}; pass --memory-collection {name} to check it anyway)"
            )
    else:
        require_collection(path, name, client)
    with MemoryStore(path if client is None else client, collection=name, retriever=r) as store:
        linked = LinkedDocuments(store, recover=False)
        memory = linked.check(repair=args.repair)
    data = dataclasses.asdict(memory)
    data["ok"] = memory.ok
    return data, ""


def _print_memories(memory: dict[str, Any] | None, note: str) -> None:
    if memory is None:
        print(note)
        return
    print(
        f"memories in {memory['memory_collection']!r} of {memory['documents_collection']!r}: "
        f"{memory['documents']} documents, {memory['memories']} live memories made from them"
    )
    for key in ("orphaned", "stale", "missing"):
        ids = memory[key]
        if ids:
            shown = ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else "")
            print(f"memories {key}: {len(ids)} ({shown})")
    if memory["pending_intents"] or memory["journal_damaged"]:
        damaged = " (damaged)" if memory["journal_damaged"] else ""
        print(f"interrupted linked writes: {memory['pending_intents']}{damaged}")
    state = "ok" if memory["ok"] else ("repaired" if memory["repaired"] else "drift")
    print(f"memory status: {state}")
