"""The engine's value types and their validation: documents, hits, search options,
``where`` filters, and the stored chunk format (``records``, internal to the engine)."""
