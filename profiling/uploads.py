"""Import runs that arrive as bytes (a browser upload) rather than as files on disk.

`profiling.exchange.import_runs` reads files and tells the format by the suffix,
so each upload is copied to a private temporary folder under its own name; an
error then names the uploaded file, not the temporary path. All or nothing, as
the exchange is: a file with any problem stores nothing. The checks and limits
are the import's (`core.datafiles`, `core.plausibility`); an upload above the
size limit is refused before it is written anywhere.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from core import exportfile
from core.errors import DataFileError
from profiling import exchange


@dataclass(frozen=True)
class Upload:
    """One uploaded file: the name it had on the user's machine and its contents."""

    name: str
    content: bytes


def import_uploads(db_path: Path, runs: Upload, timelines: Upload | None = None) -> int:
    """Store the runs (and timelines) of uploaded export files; returns how many runs."""
    exportfile.check_size(runs.name, len(runs.content), "runs")
    if timelines is not None:
        exportfile.check_size(timelines.name, len(timelines.content), "samples")
    with tempfile.TemporaryDirectory(prefix="memplan-upload-") as tmp:
        folder = Path(tmp)
        runs_path = _copy(folder / "runs", runs)
        timelines_path = _copy(folder / "timelines", timelines) if timelines else None
        try:
            return exchange.import_runs(db_path, runs_path, timelines_path)
        except DataFileError as error:
            # Name the uploads, not the temporary copies.
            message = str(error)
            for path, upload in ((runs_path, runs), (timelines_path, timelines)):
                if path is not None and upload is not None:
                    message = message.replace(str(path), upload.name)
            raise DataFileError(message) from None


def _copy(folder: Path, upload: Upload) -> Path:
    # Only the base name: an uploaded name is never a path into this machine.
    path = folder / (Path(upload.name).name or "upload")
    folder.mkdir()
    path.write_bytes(upload.content)
    return path
