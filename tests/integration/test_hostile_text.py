"""Hostile text in real ``memplan`` processes: a Parquet bomb refused, escapes shown escaped.

Issue 38, items 2 and 5, as a user meets them: ``memplan import`` of a few-KB
zstd Parquet whose one message decompresses to 32 MiB ends in one line and exit
2 with nothing stored; ``memplan show`` of an imported run whose message sets the
terminal's title writes no ESC or BEL byte to its (real, piped) stdout.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from core import store
from profiling import exchange
from tests.integration.test_cli_hardening import one_error_line, python


def memplan(*args: str):
    """``python -m memplan`` in its own process: these tests read its real, piped output."""
    return python("-m", "memplan", *args)


def _export(tmp_path, make_record, **text: str):
    source = tmp_path / "source.duckdb"
    store.insert_run(source, make_record(run_id="r1", **text))
    exchange.export_runs(source, tmp_path / "runs.parquet")
    return tmp_path / "runs.parquet"


def test_a_parquet_bomb_is_refused_in_one_line_and_nothing_is_stored(tmp_path, make_record):
    plain = pq.read_table(_export(tmp_path, make_record))
    column = plain.schema.get_field_index("message")
    bomb = tmp_path / "bomb.parquet"
    table = plain.set_column(column, "message", pa.array(["x" * 32 * 2**20], pa.string()))
    pq.write_table(table.replace_schema_metadata(plain.schema.metadata), bomb, compression="zstd")
    db = tmp_path / "memplan.duckdb"

    line = one_error_line(memplan("import", str(bomb), "--db", str(db)))

    assert line.startswith(f"error: {bomb}: column message decompresses to 32.00 MiB (")
    assert line.endswith("a message may have at most 65,536 characters")
    assert not db.exists() or store.load_runs(db).empty


def test_show_writes_no_escape_byte_of_a_stored_message(tmp_path, make_record):
    runs = _export(tmp_path, make_record, message="\x1b]0;pwned\x07\x1b[2J", hostname="h\u202e")
    db = tmp_path / "memplan.duckdb"
    assert memplan("import", str(runs), "--db", str(db)).returncode == 0

    done = memplan("show", "r1", "--db", str(db))

    assert done.returncode == 0, done.stderr
    assert [raw for raw in ("\x1b", "\x07", "\u202e") if raw in done.stdout] == []
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in done.stdout and "h\\u202e" in done.stdout
