"""Plain text and Markdown: ``.md``, ``.markdown``, ``.txt``, ``.rst`` (UTF-8)."""

from __future__ import annotations

import os

from ..errors import InvalidDocumentError
from .base import LoadedText

__all__ = ["first_h1", "load_text"]

_TYPES = {".md": "md", ".markdown": "md", ".txt": "txt", ".rst": "rst"}


def load_text(data: bytes, name: str) -> LoadedText:
    """UTF-8 text (a byte order mark is dropped), titled by its first ``# `` heading."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = (
            f"cannot read {name!r}: it is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "convert it to UTF-8"
        )
        raise InvalidDocumentError(msg) from None
    if "\x00" in text:
        msg = f"cannot read {name!r}: it contains NUL bytes (binary?); pass a text file"
        raise InvalidDocumentError(msg)
    suffix = os.path.splitext(name)[1].lower()
    return LoadedText(text=text, title=first_h1(text), type=_TYPES.get(suffix, "txt"))


def first_h1(text: str) -> str | None:
    """The text of the first ``# `` heading outside a fenced code block, if any."""
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith("# "):
            return stripped[2:].strip().rstrip("#").strip() or None
    return None
