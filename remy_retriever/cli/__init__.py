"""The ``remy`` command line: ``ingest``, ``search``, ``memory``, ``serve``, ``inspect``,
``mcp``, ``doctor``, ``eval``, ``tune`` and ``adapt``.

One module per command, each with ``add_parser(subparsers)`` and ``run(args) -> int``;
this module puts them together. The commands use the public API (the package's top-level
names, :class:`~remy_retriever.retriever.Retriever`,
:func:`~remy_retriever.ingest.files.load_files`, :class:`~remy_retriever.memory.MemoryStore`
and :mod:`remy_retriever.evaluation.beir`), plus :mod:`.common`'s look at which collections a
store has (so that a command that reads creates nothing).

Exit codes: 0 done, 1 (``remy doctor``) drift found and left, or (``remy ingest``) a
file that could not be used (:mod:`.ingest`), 2 an error. Every error,
a :class:`~remy_retriever.errors.RemyError` or anything unexpected, is printed as one
``remy: error: ...`` line on stderr, never as a traceback. Human-readable output and error
messages are escaped for the terminal (:func:`.common.terminal_safe`): stored text cannot
move the cursor, retitle or clear the terminal, or reorder what is shown. ``--json``
output is exact.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..errors import RemyError
from . import adapt, doctor, ingest, inspect, mcp, memory, search, serve, tune
from . import eval as eval_command
from .common import TerminalWriter, terminal_safe

__all__ = ["build_parser", "main", "memory_main"]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except where there is nothing to show
    (``None``: the help says what happens; a switch; a help that names it already)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if default is None or isinstance(default, bool) or "default" in text:
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors escaped for the terminal like every message; every
    parser and subparser shows defaults in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {terminal_safe(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``remy`` parser; parsed arguments carry ``run``, the command's ``run``."""
    parser = _Parser(
        prog="remy", description="Hybrid BM25 + dense retrieval over Chroma, with citations."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in (
        ingest,
        search,
        memory,
        serve,
        inspect,
        mcp,
        doctor,
        eval_command,
        tune,
        adapt,
    ):  # --help
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``remy`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    out = sys.stdout if getattr(args, "json", False) else TerminalWriter(sys.stdout)
    try:
        with contextlib.redirect_stdout(out):
            code = run(args)
            out.flush()  # a closed pipe fails here, not at exit
        return code
    except RemyError as exc:
        return _fail(str(exc))
    except BrokenPipeError:  # the reader went away (`remy search ... | head -1`)
        _silence_stdout()
        return 2
    except KeyboardInterrupt:
        return _fail("interrupted")
    except Exception as exc:
        if os.environ.get("REMY_DEBUG"):
            raise
        return _fail(
            f"unexpected {type(exc).__name__}: {exc} (a bug in remy-retriever: please "
            "report it; REMY_DEBUG=1 shows the traceback)"
        )


def _fail(message: str) -> int:
    print(f"remy: error: {terminal_safe(message)}", file=sys.stderr)
    return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def memory_main(argv: Sequence[str]) -> int:
    """``remy memory`` followed by ``argv``, e.g. ``memory_main(["add", "..."])``."""
    return main(["memory", *argv])
