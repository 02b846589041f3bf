"""Storage backends: the Chroma-backed dense store and the derived lexical index."""
