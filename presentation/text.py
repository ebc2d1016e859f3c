"""Text from users and databases, made safe to show as Markdown.

Streamlit renders Markdown in most of what a page writes (``st.markdown``,
``st.caption``, ``st.info``/``warning``/``error``/``success``, metric labels and
help). A string that came from outside — a URL parameter, a stored model's
title, a run's message, a host name, an uploaded file's name, a path — must
show as written, never as a link, an image or formatting: `plain` escapes every
character Markdown (and Streamlit's extensions: ``$math$``, ``:red[...]``,
``:emoji:``) may read, and `code` puts text in a code span, which shows it
literally.

Escaping is not enough for bare addresses: GitHub-flavoured Markdown links
``https://...``, ``www.`` and ``name@host`` wherever they appear in the text,
escaped or not (it finds them after the escapes are read). `plain` puts an
invisible word joiner (U+2060) after such a colon, inside ``www.`` and after an
``@``, which keeps them text: they look the same, and a copied address no
longer works as one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

# Every character Markdown (and Streamlit's extensions: $math$, :colour[...]) may read.
MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&\"'=])")
_BACKTICKS = re.compile(r"`+")
WORD_JOINER = "\u2060"
# What a table shows for a value that was never measured or does not apply (Streamlit
# would print "None").
MISSING_CELL = "—"
# Where GitHub-flavoured Markdown would start a link: "scheme://", "www." and "@".
_AUTOLINKS = re.compile(r":(?=//)|www(?=\.)|@", re.IGNORECASE)


def plain(text: object) -> str:
    """``text`` escaped for Streamlit's Markdown, so it shows exactly as written, on one line.

    No part of it becomes a link, an image, HTML or formatting (see the module docstring).
    """
    unlinked = _AUTOLINKS.sub(lambda found: found.group(0) + WORD_JOINER, str(text))
    escaped = MARKDOWN_SPECIALS.sub(r"\\\1", unlinked)
    return escaped.replace("\r", " ").replace("\n", " ")


def text_cells(frame: Any, formats: Mapping[str, str]) -> Any:
    """``frame`` (a pandas DataFrame) as text for an HTML table (``st.table``, whose cells are
    Markdown): each column named in ``formats`` as figures in that format (``"{:,.2f}"``),
    a missing or infinite one as MISSING_CELL; every other cell escaped (`plain`)."""

    def figure(value: object, form: str) -> str:
        number = float(value) if value is not None else math.nan  # type: ignore[arg-type]
        return form.format(number) if math.isfinite(number) else MISSING_CELL

    return frame.assign(
        **{
            column: [
                figure(value, formats[column]) if column in formats else plain(value)
                for value in frame[column]
            ]
            for column in frame.columns
        }
    )


def code(text: object) -> str:
    """``text`` as a Markdown code span (shown literally, in a monospace font), on one line."""
    shown = str(text).replace("\r", " ").replace("\n", " ")
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{padding}{shown}{padding}{fence}"


def sentence(words: str) -> str:
    """``words`` as a sentence: the first letter capitalised, a full stop at the end (a
    clause such as `modeling.transfer.Transfer.sentence` shown on its own). Not escaped."""
    return words[:1].upper() + words[1:] + "."
