"""The embedding and reranking models, and where their files are."""
