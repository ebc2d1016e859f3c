"""The README's GPU answer (its fourth question), golden against the README itself: the
command the README shows prints, on a fresh database seeded with the bundled runs, the
lines the README shows under it, word for word."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from core import database
from memplan import cli

README = Path(__file__).resolve().parents[2] / "README.md"
GPU_COMMAND = "$ memplan size gpu "


def readme_gpu_block() -> tuple[list[str], list[str]]:
    """The README's ``memplan size gpu`` example: its arguments and the lines it shows."""
    blocks = re.findall(r"```text\n(.*?)```", README.read_text(), flags=re.DOTALL)
    for block in blocks:
        lines = block.rstrip("\n").split("\n")
        if lines[0].startswith(GPU_COMMAND):
            return shlex.split(lines[0].removeprefix("$ memplan ")), lines[1:]
    raise AssertionError(f"README.md shows no '{GPU_COMMAND}...' example")


def test_the_readme_gpu_answer_is_what_memplan_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memplan.duckdb"
    assert database.created_seeded(db)
    argv, shown = readme_gpu_block()

    assert cli.main([*argv, "--db", str(db)]) == 0

    assert capsys.readouterr().out.rstrip("\n").split("\n") == shown
