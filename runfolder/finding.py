"""Finding run folders: unique new names, the entries under ``runs/``, and ``latest``.

Both command lines accept ``latest`` wherever they take a run folder, and resolve it here
so that both mean the same folder:

    latest = the newest entry directly under ``runs/`` that is a run folder (it has a
    ``manifest.json``) or a comparison folder (``compare.json``); newest = started last,
    by the ``created_utc`` its manifest (or ``compare.json``) records, ties (runs started
    in the same second) broken by which of those files was written last.

A folder whose manifest cannot be read still counts, by its file's time, so that
``latest`` never silently skips the newest run: the command then says what is wrong with it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson

from runfolder.errors import RunFolderError
from runfolder.layout import COMPARISON, MANIFEST

LATEST = "latest"
RUNS_ROOT = Path("runs")


def unique_folder(root: Path, name: str) -> Path:
    """Create and return ``root/name``, or ``root/name-2``, ``-3``, ... if it is taken.

    ``mkdir`` either creates the folder or fails, atomically, so two runs started in the
    same second (or the same process twice) never get one folder, even concurrently.
    """
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = root / (name if n == 1 else f"{name}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise RunFolderError(f"{root} holds 10,000 folders named {name}-*; choose another --run")


def _record_file(folder: Path) -> Path | None:
    for name in (MANIFEST, COMPARISON):
        if (folder / name).is_file():
            return folder / name
    return None


def started(folder: Path) -> tuple[str, int]:
    """The sort key of a run or comparison folder: (``created_utc``, record file's mtime in ns).

    An unreadable record sorts by its file's time alone (as an ISO text, comparable with
    ``created_utc``)."""
    path = _record_file(folder)
    if path is None:
        return ("", 0)
    stamp = path.stat().st_mtime_ns
    try:
        raw = orjson.loads(path.read_bytes())
        created = raw.get("created_utc") if isinstance(raw, dict) else None
    except (OSError, orjson.JSONDecodeError):
        created = None
    if not isinstance(created, str):
        created = datetime.fromtimestamp(stamp / 1e9, UTC).isoformat(timespec="seconds")
    return (created, stamp)


def entries(root: Path = RUNS_ROOT) -> list[Path]:
    """Run and comparison folders directly under ``root``, newest first."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _record_file(p) is not None]
    return sorted(found, key=lambda p: (started(p), p.name), reverse=True)


def resolve_run(text: str | Path, root: Path = RUNS_ROOT) -> Path:
    """The folder ``text`` names: ``latest`` (see the module docstring), else the path itself."""
    if str(text) != LATEST:
        return Path(text)
    found = entries(root)
    if not found:
        raise RunFolderError(
            f"'latest' found no run folder under {root}/; start one with: make run "
            "(or pass a run folder)"
        )
    return found[0]
