"""The command-line value parsers both CLIs share: memory sizes, memory limits and counts."""

from __future__ import annotations

import argparse

import pytest

from core.errors import ConfigError
from core.units import GIB, TIB, check_memory_limit, parse_budget, parse_bytes
from memplan.commands import positive_int, seed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16GiB", 16 * 2**30),
        ("16G", 16 * 2**30),
        ("1500MiB", 1500 * 2**20),
        ("2T", 2 * 2**40),
        ("1.5GiB", int(1.5 * 2**30)),
        ("64GB", 64 * 2**30),
        ("256gb", 256 * 2**30),
        ("1TB", 2**40),
        ("512MB", 512 * 2**20),
        ("4KB", 4096),
        ("4096", 4096),
    ],
)
def test_memory_sizes_are_binary_whatever_the_suffix(text: str, expected: int) -> None:
    # One meaning of "GB" everywhere: DIMMs, and so `size buy`'s answers, are binary.
    assert parse_bytes(text) == expected


def test_a_gb_budget_means_what_size_buy_answers_in() -> None:
    from modeling.sizing import BYTES_PER_MEMORY_GB

    assert parse_bytes("256GB") == 256 * BYTES_PER_MEMORY_GB == parse_bytes("256GiB")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-5GiB", "must be positive"),
        ("0", "must be positive"),
        ("0.1", "must be positive"),
        ("lots", "is not a memory size"),
        ("16 parsecs", "is not a memory size"),
    ],
)
def test_bad_memory_sizes_say_what_would_be_right(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_bytes(text)


def test_a_budget_without_a_unit_is_refused_with_an_example() -> None:
    # `--budget 12` meant 12 GiB to the researcher who typed it, and was 12 bytes.
    with pytest.raises(argparse.ArgumentTypeError, match="'12' has no unit: .* e.g. 12GiB"):
        parse_budget("12")

    assert parse_budget("12GiB") == parse_budget("12GB") == 12 * GIB


def test_memplan_size_refuses_a_bare_budget(capsys) -> None:
    from memplan.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["size", "image", "--budget", "12", "--batch-size", "4"])

    assert stopped.value.code == 2
    assert "'12' has no unit" in capsys.readouterr().err


def test_counts_must_be_whole_and_positive() -> None:
    assert positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match="not a whole number"):
        positive_int("2.5")


def test_a_memory_limit_above_the_machines_ram_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as refused:
        check_memory_limit(100 * TIB, total_ram_bytes=int(23.5 * GIB))
    assert str(refused.value) == (
        "memory limit 100.00 TiB is more than this machine's 23.50 GiB of physical RAM; "
        "give at most 23.5GiB"
    )


def test_a_memory_limit_within_the_machines_ram_is_kept() -> None:
    assert check_memory_limit(16 * GIB, total_ram_bytes=int(23.5 * GIB)) == 16 * GIB


@pytest.mark.parametrize("argv", [("run",), ("sweep",), ("size", "image"), ("size", "batch")])
def test_every_help_that_takes_a_size_says_gb_is_binary(argv, capsys) -> None:
    from memplan import cli

    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([*argv, "--help"])
    assert "GB = GiB = 2^30" in " ".join(capsys.readouterr().out.split())


def test_a_seed_is_what_numpy_and_keras_take() -> None:
    assert seed("0") == 0 and seed(str(2**32 - 1)) == 2**32 - 1
    for bad in ("-1", str(2**32)):
        with pytest.raises(argparse.ArgumentTypeError, match="a seed is from 0 to 4294967295"):
            seed(bad)
