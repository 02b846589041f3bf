"""Token counting for the chunker.

A :data:`TokenCounter` counts the model tokens of a batch of texts; callers pass a real
tokenizer's, or use :func:`approximate_token_counter`, a tokenizer-free estimate.
:class:`CheckedCounter` is how :func:`~remy_retriever.text.chunking.chunk_text` calls
either: once per batch, checking that the counts it gets back are usable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from ..errors import InvalidInputError

__all__ = [
    "COUNT_CALL_CHARS",
    "COUNT_CALL_TEXTS",
    "CheckedCounter",
    "TokenCounter",
    "approximate_token_counter",
]

#: Counts the model tokens of each text in a batch, special tokens (``[CLS]``/``[SEP]``)
#: included, e.g. ``lambda texts: [len(i) for i in tok(list(texts))["input_ids"]]``.
TokenCounter = Callable[[Sequence[str]], list[int]]

# A letter/digit run counts one piece per 6 characters; other non-space characters one each.
_APPROX_PIECE = re.compile(r"\w{1,6}|[^\w\s]")
_APPROX_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003ffff]"
)


def approximate_token_counter(texts: Sequence[str]) -> list[int]:
    """A tokenizer-free, deliberately generous estimate of WordPiece/BPE token counts.

    Each text counts ``ceil(1.5 * pieces) + 2`` tokens (2 for ``[CLS]``/``[SEP]``), where
    a run of letters/digits is one piece per 6 characters (at least one), every CJK
    character is one more piece, and every other non-space character (punctuation,
    emoji, combining mark) is a piece. English prose comes out around 1.5 tokens per
    word against about 1.3 for MiniLM's tokenizer. Random strings (base64, hashes) can
    exceed the estimate: pass a real tokenizer's counter when the budget is a hard limit.
    """
    counts: list[int] = []
    for text in texts:
        pieces = len(_APPROX_PIECE.findall(text)) + len(_APPROX_CJK.findall(text))
        counts.append(math.ceil(1.5 * pieces) + 2)
    return counts


#: A batch is passed to the counter in calls of at most this many characters (and
#: texts): a tokenizer keeps every text's encoding (ids, offsets, token strings) until
#: the call returns, about 200 bytes a token, so one call for a 50 MB document held
#: gigabytes. Calls this size keep that to a few MB and cost no measurable time.
COUNT_CALL_CHARS = 1 << 18
COUNT_CALL_TEXTS = 4096


class CheckedCounter:
    """Calls the token counter in batches and checks what it returns."""

    def __init__(self, count_tokens: TokenCounter, document_id: str) -> None:
        self._count_tokens = count_tokens
        self._document_id = document_id

    def __call__(self, texts: list[str]) -> list[int]:
        result: list[int] = []
        start = 0
        while start < len(texts):
            end, chars = start, 0
            while end < len(texts) and end - start < COUNT_CALL_TEXTS:
                chars += len(texts[end])
                if chars > COUNT_CALL_CHARS and end > start:
                    break
                end += 1
            result += self._checked(texts[start:end])
            start = end
        return result

    def _checked(self, texts: list[str]) -> list[int]:
        counts = self._count_tokens(texts)
        if len(counts) != len(texts):
            msg = (
                f"chunk_text({self._document_id!r}): count_tokens returned {len(counts)} "
                f"counts for {len(texts)} texts; it must return one count per text, in order"
            )
            raise InvalidInputError(msg)
        result: list[int] = []
        for count in counts:
            value = int(count)
            if value < 0:
                msg = (
                    f"chunk_text({self._document_id!r}): count_tokens returned {count!r}; "
                    "token counts must be non-negative integers"
                )
                raise InvalidInputError(msg)
            result.append(value)
        return result
