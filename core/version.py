"""memplan's version: the one place it is written (pyproject.toml reads it from here).

Shown by ``memplan --version``, on every dashboard page's footer and in the sizing
report (`memplan_version`: the version and the commit it was made from, read from
git's files without running git); CHANGELOG.md says what changed in each release,
schema versions included.
"""

from __future__ import annotations

import re
from pathlib import Path

__version__ = "0.2.0"

REPO_ROOT = Path(__file__).resolve().parents[1]
COMMIT_CHARS = 12
UNKNOWN_COMMIT = "unknown commit"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The commit checked out at ``root``, read from ``.git`` without running git; None if none.

    Follows ``HEAD`` to its branch, a loose ref or ``packed-refs``; a ``.git``
    file (a worktree) points at the real folder. Uncommitted edits are not seen.
    """
    try:
        git = root / ".git"
        if git.is_file():
            pointer = git.read_text().strip()
            if not pointer.startswith("gitdir:"):
                return None
            git = (root / pointer.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if _SHA.match(head) else None
        ref = head.removeprefix("ref:").strip()
        common = git / "commondir"
        shared = (git / common.read_text().strip()).resolve() if common.is_file() else git
        for folder in dict.fromkeys((git, shared)):
            loose = folder / ref
            if loose.is_file():
                sha = loose.read_text().strip()
                return sha if _SHA.match(sha) else None
        packed = shared / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name.strip() == ref and _SHA.match(sha):
                    return sha
    except (OSError, UnicodeDecodeError):
        return None
    return None


def memplan_version(root: Path = REPO_ROOT) -> str:
    """``memplan 0.2.0, commit 1a2b3c4d5e6f`` (``unknown commit`` without a readable .git).

    The version is `core.version.__version__`, the one the dashboard's footer and
    ``memplan --version`` show; the commit is read from ``root``'s git files.
    """
    commit = git_commit(root)
    return f"memplan {__version__}, " + (
        f"commit {commit[:COMMIT_CHARS]}" if commit else UNKNOWN_COMMIT
    )
