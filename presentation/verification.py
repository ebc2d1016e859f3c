"""How a verification verdict (`application.verify.Verification`) reads on a page: Markdown.

The verdict's words and the command that would measure it are the application
layer's; this only escapes the words and shows the command as code.
"""

from __future__ import annotations

from application.verify import Verification
from presentation.text import code, plain


def markdown(said: Verification) -> str:
    """The verdict as Markdown to show on a page: the words escaped, the command as code."""
    if not said.command:
        return plain(said.text)
    return f"{plain(said.text)}: verify it with {code(said.command)} or the button below"
