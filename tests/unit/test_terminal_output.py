"""Stored text reaches the terminal with its control characters escaped, never obeyed.

Issue 38, item 5: an imported run whose ``message`` or ``hostname`` held
``\\x1b[2J\\x1b[31m`` cleared the screen and turned it red when ``memplan show``
or ``list`` printed it; an OSC-8 link or a title change (``\\x1b]0;pwned\\x07``)
went to the terminal as well. Every command now prints them as Python writes
them in a string; ``--json`` escapes them itself, as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import store
from memplan.cli import main
from presentation.text import escaped_controls
from profiling import exchange
from tests.conftest import build_record

CLEAR_AND_RED = "\x1b[2J\x1b[31m"
TITLE = "\x1b]0;pwned\x07"
LINK = "\x1b]8;;https://evil.test/\x1b\\click\x1b]8;;\x1b\\"
RAW = ("\x1b", "\x07", "\x00", "\u202e", "\x9b")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database whose one run was imported with hostile text."""
    source = tmp_path / "source.duckdb"
    record = build_record(
        run_id="hostile",
        message=f"{CLEAR_AND_RED}done {TITLE} {LINK} \x00 \x9b2J",
        hostname=f"node{CLEAR_AND_RED}\u202eevil",
        cpu_model=f"Xeon {TITLE}",
    )
    store.insert_run(source, record)
    exchange.export_runs(source, tmp_path / "runs.parquet")
    path = tmp_path / "memplan.duckdb"
    exchange.import_runs(path, tmp_path / "runs.parquet")
    return path


def test_escaped_controls_writes_each_control_as_python_escapes_it():
    assert escaped_controls(f"a{CLEAR_AND_RED}b\u202ec\n") == "a\\x1b[2J\\x1b[31mb\\u202ec\\n"
    assert escaped_controls("line\n\ttab\r", keep="\n\t") == "line\n\ttab\\r"
    assert escaped_controls("ünïcode ✓ 👍🏽‍") == "ünïcode ✓ 👍🏽‍"  # printable text unchanged


@pytest.mark.parametrize(
    "argv", [["show", "hostile"], ["list"], ["list", "--all-columns"], ["list", "--csv"]]
)
def test_show_and_list_print_stored_control_characters_escaped(db, capsys, argv):
    assert main([*argv, "--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert [raw for raw in RAW if raw in out] == []
    assert "\\x1b[2J\\x1b[31m" in out  # the hostname, in every listing


def test_show_escapes_the_title_change_and_the_link_of_a_message(db, capsys):
    assert main(["show", "hostile", "--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert "\\x1b]0;pwned\\x07" in out
    assert "\\x1b]8;;https://evil.test/\\x1b\\click" in out
    assert "node\\x1b[2J\\x1b[31m\\u202eevil" in out


def test_machines_prints_a_stored_cpu_model_escaped(db, capsys):
    main(["machines", "--db", str(db)])

    out = capsys.readouterr().out
    assert [raw for raw in RAW if raw in out] == []
    assert "Xeon \\x1b]0;pwned\\x07" in out


def test_json_output_keeps_the_stored_text_exactly(db, capsys):
    assert main(["show", "hostile", "--json", "--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert [raw for raw in RAW if raw in out] == []
    assert json.loads(out)["hostname"] == f"node{CLEAR_AND_RED}\u202eevil"


def test_a_progress_bar_still_redraws_its_line():
    # tqdm writes "\r" + the bar in one call: kept; a carriage return inside text is not.
    import io

    from memplan.terminal import EscapedText

    out = io.StringIO()
    stream = EscapedText(out)
    stream.write("\r3/9 points, now 64 batch 2  33%|###|")
    stream.write("run r1: ok\rforged")

    assert out.getvalue() == "\r3/9 points, now 64 batch 2  33%|###|run r1: ok\\rforged"
