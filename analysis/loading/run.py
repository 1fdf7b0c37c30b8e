"""A run folder loaded whole."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runfolder import (
    Finding,
    Manifest,
    RunFolderError,
    SessionRecord,
    is_comparison,
    load_manifest,
    read_sessions,
    verify,
)

from .cache.run_columns import AnswersDigest, cached_columns
from .logs.exchanges import RequestLog
from .logs.outputs import Outputs
from .probabilities.answers import AnswerLog, order_pair
from .provenance import HashCheck, recheck

__all__ = ["AnswersDigest", "Run", "load_run"]


@dataclass(frozen=True, eq=False)
class Run:
    """A run folder: its manifest, outputs, request log and sessions (none in older runs)."""

    manifest: Manifest
    outputs: Outputs
    requests: RequestLog
    sessions: tuple[SessionRecord, ...] = ()
    hashes: HashCheck | None = None  # the manifest's hashes recomputed (None: not checked)
    answers: AnswerLog | None = None  # the interval answers, when asked for (Probabilities)
    # What the seal check found (runfolder.integrity): each becomes a banner.
    seal: tuple[Finding, ...] = ()


def load_run(
    path: Path | str,
    *,
    probabilities: bool = False,
    orders: tuple[str, str] | None = None,
    digest: AnswersDigest | None = None,
) -> Run:
    """Load manifest.json, outputs.jsonl, requests.jsonl and sessions.jsonl of one run folder.

    Each log is read once: with ``probabilities``, the same pass over outputs.jsonl also
    reads the interval paths and the pass over requests.jsonl joins their answers
    (``Run.answers``); ``orders`` pairs option orders (default: the manifest's, as
    ``order_pair`` picks them; a diff passes run A's to run B). The columns come from
    ``cached_columns``: kept in ``RUN/.columns/``, read back while the logs are unchanged.
    With ``digest``, the answers go to it as soon as they are read and are not kept
    (``Run.answers`` None): read back, they are then never in memory beside the outputs.
    """
    run_dir = Path(path)
    if is_comparison(run_dir):
        raise RunFolderError(
            f"{run_dir} is a comparison folder (numericjev compare), not one run: "
            f"`numericjev analyze {run_dir}` summarises it; to look at one of its runs, pass "
            f"its folder, e.g. {run_dir}/<suite>-m1-<model>"
        )
    manifest = load_manifest(run_dir, partial=True)
    pairing = (orders or order_pair(manifest.orders)) if probabilities else None
    outputs, requests, answers = cached_columns(run_dir, manifest, pairing, digest)
    return Run(
        manifest=manifest,
        outputs=outputs,
        requests=requests,
        sessions=tuple(read_sessions(run_dir)),  # absent before sessions.jsonl: ()
        hashes=recheck(run_dir, manifest),
        answers=answers,
        seal=verify(run_dir, manifest.raw),
    )
