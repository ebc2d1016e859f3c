"""A Slurm sweep's work directory: private to its user, and the manifest that makes it resumable.

The jobs of a cluster sweep (`profiling.cluster_sweep`) read their point's spec
and submitit's pickled call from this directory and write their records into it,
so it must be the user's own and writable by nobody else (`prepare_work_dir`).
Its ``manifest.json`` remembers each point's run id and job ids, so a submitter
that was killed (``kill -9``, a lost login session) loses nothing: the same
command again finds what its jobs left (`load_manifest`, `save_manifest`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from profiling import pending

WORK_DIR_SUFFIX = ".slurm"
MANIFEST = "manifest.json"
# The work directory and the two folders in it that jobs read from: submitit unpickles
# ``logs/<job>_submitted.pkl`` on the node, so whoever can write there runs code as you.
WORK_SUBDIRS = ("logs", "points")
PRIVATE_MODE = 0o700


def default_work_dir(db_path: Path) -> Path:
    """``runs.slurm/`` beside ``runs.duckdb``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + WORK_DIR_SUFFIX)


def _unsafe_because(path: Path) -> str | None:
    """Why ``path`` (an existing directory) is not private to this user; None when it is."""
    info = path.lstat()
    me = os.geteuid()
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid != me:
            return f"is a symbolic link owned by uid {info.st_uid}, not by you (uid {me})"
        info = path.stat()
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != me:
        return f"is owned by uid {info.st_uid}, not by you (uid {me})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} " + (
            f"(mode {stat.S_IMODE(info.st_mode):04o})"
        )
    return None


def prepare_work_dir(work_dir: Path) -> None:
    """Make ``work_dir`` and its ``logs/``, ``points/`` (mode 0700), or check existing ones.

    An existing one must be owned by this user and writable by nobody else: the
    jobs load the pickled call submitit writes there and run it as this user.
    Raises `ConfigError` naming the directory and how to fix it.
    """
    work_dir = Path(work_dir)
    for path in (work_dir, *(work_dir / name for name in WORK_SUBDIRS)):
        if path == work_dir:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=PRIVATE_MODE)
            os.chmod(path, PRIVATE_MODE)  # whatever the umask took away or added
            continue
        except FileExistsError:
            pass
        reason = _unsafe_because(path)
        if reason:
            raise ConfigError(
                f"the Slurm work directory {path} {reason}; its jobs run code stored there, "
                f"so it must be yours and writable only by you: `chown $(id -un) {path} && "
                f"chmod 700 {path}` if you trust what is in it, or give another --work-dir"
            )


def load_manifest(work_dir: Path, db_path: Path) -> dict[str, Any]:
    """The work directory's manifest (a new one if there is none) for ``db_path``'s sweeps.

    Raises `ConfigError` when the file is not a manifest or belongs to another database.
    """
    path = work_dir / MANIFEST
    if not path.exists():
        return {"database": str(Path(db_path).resolve()), "points": {}}
    try:
        manifest = json.loads(path.read_text())
        points = manifest["points"]
        owner = manifest["database"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{path} is not a memplan cluster-sweep manifest ({error}); "
            "give another --work-dir or move that directory away"
        ) from None
    if owner != str(Path(db_path).resolve()):
        raise ConfigError(
            f"the work directory {work_dir} belongs to the sweeps of {owner}, not of "
            f"{Path(db_path).resolve()}; give each database its own --work-dir"
        )
    if not isinstance(points, dict):
        raise ConfigError(f"{path} has no table of points; give another --work-dir")
    return manifest


def save_manifest(work_dir: Path, db_path: Path, entries: Mapping[str, dict[str, Any]]) -> None:
    """Add ``entries`` (point id -> its run id and job ids) to the manifest, atomically."""
    path = work_dir / MANIFEST
    known = load_manifest(work_dir, db_path)["points"]
    known.update(entries)
    manifest = {"database": str(Path(db_path).resolve()), "points": known}
    pending.write_atomically(path, json.dumps(manifest))
