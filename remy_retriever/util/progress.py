"""Whether to show a progress bar."""

from __future__ import annotations

import os
import sys

__all__ = ["show_progress"]


def show_progress(progress: bool | None) -> bool:
    """Show a progress bar? ``None``: only on a terminal, and never under pytest."""
    if progress is not None:
        return progress
    return (
        bool(getattr(sys.stderr, "isatty", lambda: False)())
        and "PYTEST_CURRENT_TEST" not in os.environ
    )
