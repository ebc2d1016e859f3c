"""The README and docs/ stay inside the repository, and the README's commands parse.

Every relative link in README.md, CHANGELOG.md and docs/**/*.md resolves to a
file (or folder) inside the repository, and an anchor to a heading of a
Markdown file names a heading it has; no link or path points outside the
repository (a clone has nothing beside it). Every ``memplan ...`` line in the
README's fenced code blocks parses with the `memplan` command's own parser.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [REPO / "README.md", REPO / "CHANGELOG.md", *(REPO / "docs").rglob("*.md")],
    key=str,
)
# [text](target) and ![alt](target); the target up to a space (a title may follow).
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
OUTSIDE = ("../shared", "shared/DESIGN.md", "shared/references")


def _name(page: Path) -> str:
    return str(page.relative_to(REPO))


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks, where ``[x](y)`` is code, not a link."""
    return FENCE.sub("", text)


def _links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text()))


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith("#")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} +(.+?) *#*$", _prose(page.read_text()), re.M)
    return {_slug(heading) for heading in headings}


def test_there_are_pages_and_links_to_check() -> None:
    assert REPO / "docs" / "README.md" in PAGES
    assert sum(len(_links(page)) for page in PAGES) > 50


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    broken = []
    for target in filter(_relative, _links(page)):
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve()
        if not resolved.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: {_name(resolved)} has no heading #{anchor}")
    assert not broken, f"{_name(page)}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert not [marker for marker in OUTSIDE if marker in text]


def test_no_source_file_cites_a_file_outside_the_repository() -> None:
    sources = [
        path
        for folder in ("core", "profiling", "modeling", "presentation", "dashboard", "memplan")
        for path in (REPO / folder).rglob("*.py")
    ]
    sources += [REPO / "app.py", REPO / "data" / "REFERENCE.md"]
    citing = [_name(p) for p in sources if any(m in p.read_text() for m in OUTSIDE)]
    assert not citing


def _readme_commands() -> list[str]:
    """The ``memplan ...`` lines of the README's code blocks (a ``$ `` prompt dropped)."""
    lines = []
    for block in FENCE.findall((REPO / "README.md").read_text()):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("memplan "):
                lines.append(line)
    return list(dict.fromkeys(lines))


def test_the_readme_shows_memplan_commands() -> None:
    assert len(_readme_commands()) >= 3


@pytest.mark.parametrize("line", _readme_commands())
def test_every_readme_command_parses(line: str) -> None:
    from memplan.cli import build_parser  # the `memplan` command (memplan/cli.py)

    words = shlex.split(line, comments=True)
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exit_:  # argparse's way to refuse a line
        pytest.fail(f"`{line}` does not parse (exit {exit_.code})")
