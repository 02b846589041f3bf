"""Fixtures for the langchain-remy tests: the set-up both adapters share, from
integrations/remy_adapter_fixtures.py (real embedded Chroma, the real MiniLM model)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from remy_adapter_fixtures import *  # noqa: F403  (its __all__; sets the offline environment)
