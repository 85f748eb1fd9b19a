"""The one truncation of the stack: bounded, marked, exact."""

import pytest
from osworld_mcp_env.text import truncate


def test_short_text_is_returned_unchanged() -> None:
    assert truncate("hello", 5) == "hello"
    assert truncate("", 0) == ""


def test_cut_text_names_what_was_dropped_and_fits_the_bound() -> None:
    text = "a" * 100
    cut = truncate(text, 60)
    # 60 - len("\n[... truncated 100 characters ...]") = 60 - 35 = 25 characters kept, 75 dropped.
    assert cut == "a" * 25 + "\n[... truncated 75 characters ...]"
    assert len(cut) <= 60


@pytest.mark.parametrize("length", [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 100_001])
@pytest.mark.parametrize("limit", [0, 1, 20, 33, 34, 35, 36, 64, 1000])
def test_result_never_exceeds_the_limit(length: int, limit: int) -> None:
    text = "é" * length
    cut = truncate(text, limit)
    assert len(cut) <= limit
    assert text.startswith(cut.split("\n[... truncated")[0])
    if length <= limit:
        assert cut == text


def test_a_limit_too_small_for_the_marker_cuts_bare() -> None:
    assert truncate("abcdefghij" * 10, 7) == "abcdefg"


def test_negative_limit_is_a_wiring_error() -> None:
    with pytest.raises(ValueError, match="limit must be >= 0"):
        truncate("x", -1)
