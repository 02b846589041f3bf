"""Refresh the result tables in benchmarks/README.md from benchmarks/results/*.md.

    python -m benchmarks.readme

Each block between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` is replaced by
``results/NAME.md`` without its first heading line; everything else is left as written.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from benchmarks import common

README = common.ROOT / "benchmarks" / "README.md"
_BLOCK = re.compile(r"(<!-- results:([\w.-]+) -->\n).*?(<!-- /results:\2 -->)", re.S)


def refresh(readme: Path = README, results: Path = common.RESULTS_DIR) -> str:
    text = readme.read_text()

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        path = results / f"{name}.md"
        if not path.is_file():
            return match.group(0)
        body = path.read_text().split("\n", 1)[1].strip()  # drop the "# title" line
        body = re.sub(r"^## ", "#### ", body, flags=re.M)
        return f"{match.group(1)}{body}\n{match.group(3)}"

    out = _BLOCK.sub(fill, text)
    readme.write_text(out)
    return out


def main() -> int:
    refresh()
    print(f"refreshed {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
