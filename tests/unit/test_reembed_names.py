"""Shadow collections' names: within Chroma's limits, reserved, and one per collection."""

from __future__ import annotations

import re

import pytest

from remy_retriever.stores.reembed import VECTORS_SUFFIX, shadow_name

CHROMA_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")


@pytest.mark.parametrize("length", [3, 100, 486, 487, 500, 512])
def test_a_shadow_name_is_a_valid_chroma_name_ending_in_the_reserved_suffix(length: int) -> None:
    collection = ("ab" * 300)[:length]
    name = shadow_name(collection, "0123456789ab")
    assert CHROMA_NAME.fullmatch(name), name
    assert name.endswith("-0123456789ab" + VECTORS_SUFFIX)
    if len(collection) + 25 <= 512:
        assert name.startswith(collection + "-")


def test_long_names_sharing_a_prefix_get_different_shadows() -> None:
    left, right = "a" * 505 + "x", "a" * 505 + "y"
    assert shadow_name(left, "t0") != shadow_name(right, "t0")
