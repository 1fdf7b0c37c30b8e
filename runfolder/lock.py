"""The run lock: one process at a time appends to a run folder."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from runfolder.errors import RunFolderError
from runfolder.layout import LOCK


class RunLock:
    """An exclusive, non-blocking lock on a run folder, released when the process dies."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or refuse with the holder's pid."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderError(
                f"{self.path.parent} is in use by another process (pid {holder}); "
                "wait for it to finish or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        """Drop the lock."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # no stale pid for people to wonder about
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
