"""What a command prints, made safe for a terminal: control characters shown, never obeyed.

A run's message, host name or CPU model comes from whoever wrote the file it was
imported from. Raw on a terminal, ``\\x1b[2J`` clears the screen, ``\\x1b]0;...\\x07``
sets the window's title, an OSC-8 sequence makes a link and U+202E reverses what
follows. `escaped_output` passes everything `memplan.cli.main` prints, on stdout
and stderr, through `presentation.text.escaped_controls` (line breaks and tabs
kept), so no command has to remember which of its strings were stored.
``--json`` was already safe: JSON escapes them itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from presentation.text import escaped_controls

# What a command's own output uses: kept.
KEPT = "\n\t"


class EscapedText:
    """A text stream that writes to ``stream`` with control characters escaped."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        # A progress bar (tqdm) redraws its line with one write that starts with a carriage
        # return; anywhere else a carriage return is escaped like any control character.
        redraw = "\r" if text.startswith("\r") else ""
        self.stream.write(redraw + escaped_controls(text[len(redraw) :], keep=KEPT))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        # flush, fileno, isatty, encoding...: the stream's own.
        return getattr(self.stream, name)


@contextlib.contextmanager
def escaped_output() -> Iterator[None]:
    """Within, ``sys.stdout`` and ``sys.stderr`` escape control characters (`EscapedText`)."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapedText(stdout), EscapedText(stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
