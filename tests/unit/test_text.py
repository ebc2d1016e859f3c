"""Text from outside shown on a page: escaped so Markdown shows it, never links or formats it."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from presentation.text import MISSING_CELL, WORD_JOINER, code, plain, text_cells


def _shown(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")


@pytest.mark.parametrize(
    "text",
    [
        "[re-authenticate here](https://evil.example)",
        "![x](https://evil.example/x.png)",
        "<img src=https://evil.example/y.png>",
        "**bold** _it_ `code` $x$ :red[alarm] # heading",
    ],
)
def test_plain_shows_the_text_as_written(text: str) -> None:
    assert _shown(plain(text)) == text


@pytest.mark.parametrize(
    ("text", "broken"),
    [
        ("see https://evil.example/login", "https\\:" + WORD_JOINER + "//"),
        ("HTTP://EVIL.EXAMPLE", "HTTP\\:" + WORD_JOINER + "//"),
        ("www.evil.example", "www" + WORD_JOINER + "\\."),
        ("mail admin@evil.example", "@" + WORD_JOINER),
    ],
)
def test_bare_addresses_cannot_become_links(text: str, broken: str) -> None:
    # GitHub-flavoured Markdown links bare addresses even when every character is escaped.
    assert broken in plain(text)
    assert _shown(plain(text)) == text


def test_plain_keeps_to_one_line() -> None:
    assert plain("first\nsecond\r\nthird") == "first second  third"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("/data/memplan.duckdb", "`/data/memplan.duckdb`"),
        ("a`b", "``a`b``"),
        ("`edge`", "`` `edge` ``"),
        ("two\nlines", "`two lines`"),
    ],
)
def test_code_spans_hold_any_text(text: str, span: str) -> None:
    assert code(text) == span


def test_a_frame_as_table_text_formats_figures_and_escapes_the_rest() -> None:
    frame = pd.DataFrame({"model": ["*bold* [link](x)", "ok"], "GiB": [1234.5, float("inf")]})

    shown = text_cells(frame, {"GiB": "{:,.2f}"})

    assert shown["GiB"].tolist() == ["1,234.50", MISSING_CELL]
    assert shown["model"].tolist() == [plain("*bold* [link](x)"), "ok"]
    assert frame["GiB"].tolist()[0] == 1234.5  # the frame itself is left as it was
