"""Which lexical analyser a collection uses, recorded in it like the embedder's identity.

The Chroma collection (the source of truth) records the analyser's name under
:data:`ANALYZER_KEY`; a collection with no record, such as every one made before
analysers could be chosen, is ``"english"``, and stays so with no rebuild. Opening with
``analyzer=None`` takes the recorded one, so the doors (HTTP, MCP, adapters) follow the
store. Opening with another analyser than the recorded one is refused while the
collection holds chunks, unless ``reanalyze=True``: then the new name is recorded and the
lexical index is rebuilt from Chroma with it.

The lexical index is derived data, and another client's index (a Chroma server's clients
each keep one) may have been built with another analyser: a small sidecar in its
directory (:data:`BUILT_WITH_FILE`) names the analyser that built it and that analyser's
:attr:`~remy_retriever.text.analyzers.Analyzer.version`, and an index built with another
analyser than the record says, or with another version of it, is rebuilt on open. So an
index whose terms an older remy-retriever made (a Hindi index that cut words at their
vowel signs) is re-analysed once, by the first open with the new version. A sidecar
without a version is version 1; no sidecar at all is English version 1, which English
still is: a store from before analysers existed opens with no rebuild and no write.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..errors import InvalidInputError, StoreError
from ..schema.records import ANALYZER_KEY
from ..text.analyzers import ANALYZER_NAMES, DEFAULT_ANALYZER, Analyzer, get_analyzer
from .files import read_json, write_json_atomic
from .sync import StoreSync

__all__ = ["ANALYZER_KEY", "BUILT_WITH_FILE", "check_analyzer_name", "settle_analyzer"]

_log = logging.getLogger(__name__)

#: The lexical index's sidecar naming the analyser its terms come from.
BUILT_WITH_FILE = "analyzer.json"


def check_analyzer_name(name: object) -> str | None:
    """``name`` when it is a known analyser (or ``None``); else :class:`InvalidInputError`
    listing the names. Call before anything is opened."""
    if name is None:
        return None
    return get_analyzer(name).name


def _recorded(sync: StoreSync) -> str:
    raw = sync.dense.setting(ANALYZER_KEY)
    if raw is None or raw == "":
        return DEFAULT_ANALYZER
    if raw not in ANALYZER_NAMES:
        msg = (
            f"{sync.dense.where} records the lexical analyser {raw!r:.80}, which this "
            f"version does not know ({', '.join(ANALYZER_NAMES)}); upgrade remy-retriever, "
            "or re-index with a known one: Retriever(..., analyzer='english', reanalyze=True)"
        )
        raise StoreError(msg)
    return str(raw)


def settle_analyzer(
    sync: StoreSync, lexical_path: Path, requested: str | None, *, reanalyze: bool
) -> Analyzer:
    """Choose the collection's analyser (see the module docstring), set it on the lexical
    index, and rebuild that index when its terms come from another analyser."""
    recorded = _recorded(sync)
    name = recorded if requested is None else requested
    if name != recorded:
        if not reanalyze and sync.dense.count() > 0:
            msg = (
                f"{sync.dense.where} is analysed with {recorded!r}, not {name!r}: its lexical "
                f"index holds {recorded!r} terms. Open it without analyzer= (or with "
                f"analyzer={recorded!r}), or re-index it with the new analyser: "
                f"Retriever(..., analyzer={name!r}, reanalyze=True) "
                f"(CLI: --analyzer {name} --reanalyze)"
            )
            raise InvalidInputError(msg)
        with sync.write_lock:
            sync.dense.set_metadata({ANALYZER_KEY: name}, "record the lexical analyser")
    analyzer = get_analyzer(name)
    sync.lexical.analyzer = analyzer
    sidecar = lexical_path / BUILT_WITH_FILE
    built = _built_with(sidecar)
    if reanalyze or built != (name, analyzer.version):
        with sync.write_lock:
            sync.repair_if_interrupted()  # an interrupted write is made whole first
            if sync.dense.count() > 0 or sync.lexical.count() > 0:
                _log.info(
                    "re-indexing %s with the %r analyser (version %d; the index was "
                    "built with %r version %d)",
                    sync.dense.where,
                    name,
                    analyzer.version,
                    *built,
                )
                sync.rebuild_lexical()
            write_json_atomic(sidecar, {"analyzer": name, "version": analyzer.version})
    return analyzer


def _built_with(sidecar: Path) -> tuple[str, int]:
    """The analyser and version the sidecar names; ``("", 0)`` (rebuild) if unreadable."""
    try:
        data = read_json(sidecar)
    except StoreError:  # unreadable: rebuild
        return "", 0
    if data is None:  # an index from before analysers were recorded: English
        return DEFAULT_ANALYZER, 1
    if not isinstance(data, dict) or not isinstance(data.get("analyzer"), str):
        return "", 0
    version = data.get("version", 1)  # written before analysers had versions: 1
    if not isinstance(version, int) or isinstance(version, bool):
        return "", 0
    return str(data["analyzer"]), version
