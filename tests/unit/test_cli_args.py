"""The command-line value parsers both CLIs share: memory sizes and counts."""

from __future__ import annotations

import argparse

import pytest

from core.commands import parse_bytes, positive_int


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16GiB", 16 * 2**30),
        ("16G", 16 * 2**30),
        ("1500MiB", 1500 * 2**20),
        ("2T", 2 * 2**40),
        ("1.5GiB", int(1.5 * 2**30)),
        ("64GB", 64 * 10**9),
        ("4096", 4096),
    ],
)
def test_memory_sizes_accept_binary_and_decimal_units(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-5GiB", "must be positive"),
        ("0", "must be positive"),
        ("lots", "is not a memory size"),
        ("16 parsecs", "is not a memory size"),
    ],
)
def test_bad_memory_sizes_say_what_would_be_right(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_bytes(text)


def test_counts_must_be_whole_and_positive() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match="not a whole number"):
        positive_int("2.5")
