"""remy-retriever: hybrid BM25 + dense retrieval over Chroma, with cited results."""
