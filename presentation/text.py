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

On a terminal and in an HTML page the danger is another: a control character
(ESC starts a sequence that clears the screen, recolours it, sets the window's
title or makes a link; NUL, BEL; U+202E reverses what follows). `escaped_controls`
shows each as Python writes it in a string (``\\x1b``, ``\\u202e``), so it can be
read, and nothing is done.
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
# C0 and C1 controls and DEL, and the invisible characters that reorder or hide text:
# bidi marks, embeddings, overrides and isolates, zero-width spaces, line separators.
_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b\u200c\u200e\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


def plain(text: object) -> str:
    """``text`` escaped for Streamlit's Markdown, so it shows exactly as written, on one line.

    No part of it becomes a link, an image, HTML or formatting (see the module docstring).
    """
    unlinked = _AUTOLINKS.sub(lambda found: found.group(0) + WORD_JOINER, str(text))
    escaped = MARKDOWN_SPECIALS.sub(r"\\\1", unlinked)
    return escaped.replace("\r", " ").replace("\n", " ")


def escaped_controls(text: str, keep: str = "") -> str:
    """``text`` with each control character (but those in ``keep``, e.g. ``"\\n"``) written
    as Python escapes it: ``"\\x1b[2J"`` shows as ``\\x1b[2J`` and clears nothing."""

    def escape(found: re.Match[str]) -> str:
        character = found.group(0)
        return character if character in keep else repr(character)[1:-1]

    return _CONTROLS.sub(escape, text)


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
