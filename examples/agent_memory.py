"""Agent memory: an assistant remembers a fact, updates it, and recalls it with citations.

A tiny rule-based agent (a plain Python loop standing in for an LLM, so it runs offline
and prints the same thing every time) talks with one user. It keeps its memories in a
:class:`~remy_retriever.memory.MemoryStore` linked to a document :class:`Retriever`:

1. ``remember: ...`` stores a memory in the user's container (version 1);
2. a question is answered from a hybrid search over memories *and* documents, and the
   answer cites its sources (``[1]``, ``[2]``...);
3. ``correction: ...`` updates the closest memory: a new version replaces the old one,
   which stays reachable as the new one's parent;
4. asked again, the agent answers with the latest version and cites what it replaced.

Run it with ``python examples/agent_memory.py [DATA_DIR]`` (default: a temporary
directory). It uses the bundled all-MiniLM-L6-v2 model; nothing is downloaded.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from remy_retriever import Document, Retriever
from remy_retriever.memory import MemoryResult, MemorySearchResponse, MemoryStore

USER = "dana"
HANDBOOK = [
    Document(
        id="office",
        title="Office guide",
        type="markdown",
        text=(
            "# Office guide\n\n## Kitchen\n\nThe espresso machine is in the third-floor "
            "kitchen. Oat milk is in the left fridge.\n\n## Meeting rooms\n\nBook the "
            "Atlas room for meetings of more than six people."
        ),
    ),
]
CONVERSATION = (
    "remember: Dana's favourite drink is green tea, no sugar.",
    "What does Dana like to drink?",
    "correction: Dana switched to espresso with oat milk.",
    "What does Dana like to drink?",
    "Where can Dana get an espresso?",
)


class MemoryAgent:
    """Stores ``remember:`` facts, applies ``correction:``s, answers questions with
    citations from memories and documents."""

    def __init__(self, store: MemoryStore, user: str) -> None:
        self.store = store
        self.user = user

    def handle(self, message: str) -> list[str]:
        if message.startswith("remember:"):
            memory = self.store.add(message.split(":", 1)[1].strip(), container_tag=self.user)
            return [f"Noted. [memory {memory.id} v{memory.version}]"]
        if message.startswith("correction:"):
            fact = message.split(":", 1)[1].strip()
            closest = self.store.search(fact, container_tag=self.user, limit=1)
            if not closest.results:
                memory = self.store.add(fact, container_tag=self.user)
                return [f"Noted. [memory {memory.id} v{memory.version}]"]
            old = closest.results[0]
            memory = self.store.update(old.id, fact)
            return [f"Updated: {old.id} v{old.version} -> {memory.id} v{memory.version}."]
        return self.answer(message)

    def answer(self, question: str) -> list[str]:
        response = self.store.search(
            question,
            search_mode="hybrid",
            container_tag=self.user,
            include={"relatedMemories", "documents"},
            limit=3,
            threshold=0.2,
        )
        if not response.results:
            return ["I don't know yet."]
        best = response.results[0]
        text = best.memory if isinstance(best, MemoryResult) else best.chunk.split("\n\n")[-1]
        return [f"{text} [1]", *citations(response)]

    def run(self, conversation: tuple[str, ...]) -> None:
        for message in conversation:
            print(f"user> {message}")
            first, *rest = self.handle(message)
            print(f"agent> {first}")
            for line in rest:
                print(f"       {line}")


def citations(response: MemorySearchResponse) -> list[str]:
    """One line per result: what it is, its similarity, and what it replaced."""
    lines = []
    for number, result in enumerate(response.results, start=1):
        if isinstance(result, MemoryResult):
            line = (
                f"[{number}] memory {result.id} v{result.version} "
                f"(similarity {result.similarity:.2f}, updated {result.updated_at})"
            )
            parents = result.context.parents if result.context else []
            for parent in parents:
                if parent.relation == "updates":
                    version = (result.version or 1) + (parent.version or 0)
                    line += f'; replaces v{version}: "{parent.memory}"'
        else:
            doc = result.documents[0] if result.documents else None
            title = doc.title if doc is not None and doc.title else result.id
            line = (
                f'[{number}] document "{title}" ({result.id}, similarity {result.similarity:.2f})'
            )
        lines.append(line)
    return lines


def main(data_dir: str) -> None:
    with Retriever(data_dir, collection="handbook") as docs:
        docs.add(HANDBOOK)
        # The handbook is shared: container tags (one per user) filter memories only.
        with MemoryStore(
            retriever=docs, collection="agent-memories", document_container_key=None
        ) as store:
            MemoryAgent(store, USER).run(CONVERSATION)
            chain = store.history(store.search("drink", container_tag=USER).results[0].id)
            print("history: " + " -> ".join(f"v{m.version} {m.content!r}" for m in chain))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="remy-agent-memory-") as tmp:
            main(tmp)
