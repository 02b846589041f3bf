"""Storage backends: the persistent lexical (BM25) index derived from Chroma."""
