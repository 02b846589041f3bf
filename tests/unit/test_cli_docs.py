"""The CLI documents itself. ``--help`` shows every option's default, every
command and option appears in README.md, and every option a README ``remy`` line uses
exists (in the spirit of sqlite-utils' documentation tests). General: a new command or
option is checked without changing this file."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("remy",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every leaf command (``remy search``, ``remy memory add`` ...) and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _commands(sub, (*path, name))


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


COMMANDS = dict(_commands(build_parser()))
#: ``("remy",)``, ``("remy", "memory")``, ``("remy", "memory", "add")`` ...
PREFIXES = {path[:i] for path in COMMANDS for i in range(1, len(path) + 1)}


def _mentioned(option: str, text: str) -> bool:
    return re.search(re.escape(option) + r"(?![\w-])", text) is not None


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_every_command_and_option_is_in_the_readme(path: tuple[str, ...]) -> None:
    readme = README.read_text(encoding="utf-8")
    assert " ".join(path) in readme, f"README.md never shows `{' '.join(path)}`"
    missing = [
        option
        for action in _options(COMMANDS[path])
        for option in action.option_strings
        if option.startswith("--") and not _mentioned(option, readme)
    ]
    assert missing == [], f"README.md does not document {' '.join(path)} {missing}"


def _readme_command_lines() -> Iterator[list[str]]:
    """The ``remy ...`` lines of README.md's code blocks, as argv (after ``remy``)."""
    readme = README.read_text(encoding="utf-8")
    for block in re.findall(r"```(?:bash|text)\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("remy ") and "[" not in line:  # usage lines are checked above
                yield shlex.split(line)[1:]


def test_every_option_the_readme_uses_exists() -> None:
    lines = list(_readme_command_lines())
    assert len(lines) >= 5
    unknown = []
    for argv in lines:
        path = ("remy",)
        while argv and (*path, argv[0]) in PREFIXES:
            path, argv = (*path, argv[0]), argv[1:]
        parser = COMMANDS.get(path)
        assert parser is not None, f"README.md runs an unknown command: {' '.join(path)}"
        known = {o for a in _options(parser) for o in a.option_strings}
        unknown += [f"{' '.join(path)} {a}" for a in argv if a.startswith("--") and a not in known]
    assert unknown == [], f"README.md uses options that do not exist: {unknown}"


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_help_shows_every_default(path: tuple[str, ...]) -> None:
    """Each option with a value default (not None, not a switch) shows it in --help."""
    parser = COMMANDS[path]
    text = " ".join(parser.format_help().split())
    for action in _options(parser):
        default = action.default
        if default is None or isinstance(default, bool):
            continue
        help_text = " ".join((action.help or "").split())
        assert help_text, f"{' '.join(path)} {action.option_strings[0]} has no help"
        shown = f"(default: {default})" in text or "default" in help_text
        assert shown, f"{' '.join(path)} --help hides the default of {action.option_strings[0]}"


def test_help_shows_defaults_for_real() -> None:
    """The formatter adds them (so the test above can fail): search's --k says 5."""
    text = " ".join(COMMANDS[("remy", "search")].format_help().split())
    assert "hits to return (default: 5)" in text
    assert "(default: hybrid)" in text


def test_every_readme_command_line_parses() -> None:
    """Each README ``remy`` line is accepted by the real parser as written
    (values, choices and required arguments too, not only the option names)."""
    lines = list(_readme_command_lines())
    refused = []
    for argv in lines:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            refused.append(shlex.join(["remy", *argv]))
    assert refused == [], f"README.md shows command lines remy refuses: {refused}"


def test_the_parse_check_refuses_a_bad_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search", "q", "--mode", "fuzzy"])
    capsys.readouterr()


def _usage_block() -> str:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("Every command and option, as `--help` prints them", 1)[1]
    return section.split("```text\n", 1)[1].split("```", 1)[0]


def _expanded_usage() -> dict[tuple[str, ...], str]:
    """The usage block's text per command, with its ``[store flags]`` and ``[listener
    flags]`` spelled out from the block's own definitions of them."""
    block = _usage_block()
    defs = dict(re.findall(r"^(store flags|listener flags): (.*?)(?=^\S|\Z)", block, re.M | re.S))
    out: dict[tuple[str, ...], str] = {}
    for entry in re.split(r"\n(?=remy )", block.split("\n\nstore flags:", 1)[0]):
        words = entry.split()
        path = tuple(w for w in words[:3] if re.fullmatch(r"[a-z]+", w))
        text = entry
        for name, flags in defs.items():
            text = text.replace(f"[{name}]", flags)
        out[path] = text
    return out


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_the_complete_usage_list_has_every_command_and_option(path: tuple[str, ...]) -> None:
    """The README calls its usage block complete: each command has its line there, with
    every one of its options (issue #31: serve, mcp and tune were missing)."""
    usage = _expanded_usage()
    assert path in usage, f"the README's usage block has no `{' '.join(path)}` line"
    missing = [
        option
        for action in _options(COMMANDS[path])
        for option in action.option_strings
        if option.startswith("--") and not _mentioned(option, usage[path])
    ]
    assert missing == [], f"the usage line of {' '.join(path)} lacks {missing}"
