"""Text analysis and chunking: pure functions, no I/O. :mod:`.analysis` turns text into
the terms the lexical index stores and queries; :mod:`.chunking` splits a document into
passages that fit a token budget, from its Markdown structure (:mod:`.markdown`), atoms
packed under the budget (:mod:`.atoms`) and token counts (:mod:`.tokens`)."""
