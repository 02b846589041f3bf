"""supermemory's wire shapes (the document and memory search responses) and its filter
tree as a ``where``."""
