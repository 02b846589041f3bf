"""Loading and scoring judged collections (BEIR layout) for ``remy eval`` and ``remy tune``."""
