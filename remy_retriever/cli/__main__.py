"""``python -m remy_retriever.cli ...``: the same as ``remy ...``."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
