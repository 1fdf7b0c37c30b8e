"""When a run's columns come from ``RUN/.columns/`` and when from its logs: the run's
column-cache policy, in one place (``column_cache`` keeps and recalls; ``both_logs`` reads).

Kept answers spare reading both logs; answers that must be read mean reading both logs
(the kept outputs are not loaded then); what is read is kept, the answers as soon as the
join gives them (before the outputs' columns, when they are read apart).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from analysis.loading.logs.exchanges import RequestLog
from analysis.loading.logs.outputs import LogStats, Outputs
from analysis.loading.probabilities.answers import AnswerCounts, AnswerLog
from analysis.loading.probabilities.chain_units import ChainLog
from analysis.loading.reading.both_logs import Read, read_logs
from runfolder import Manifest

from .column_cache import RUN_LOGS, cache_enabled, cache_key, keep, recall

__all__ = ["AnswersDigest", "cached_columns"]

_KEPT = {c.__name__: c for c in (Outputs, RequestLog, LogStats, AnswerLog, AnswerCounts, ChainLog)}

# Takes a run's answers as soon as they are read (their names are the outputs' own).
AnswersDigest = Callable[[AnswerLog, Manifest], None]


def cached_columns(
    run_dir: Path,
    manifest: Manifest,
    pairing: tuple[str, str] | None,
    digest: AnswersDigest | None,
) -> Read:
    """The run's outputs, exchanges and (with ``pairing``) answers: the kept ones while the
    logs are unchanged, else read from the logs and kept. With ``digest``, the answers go to
    it as soon as they are had, and come back None."""
    # Keys are taken before the logs are read: a log that grows meanwhile is not kept.
    key = cache_key(run_dir, RUN_LOGS)
    answers_key = None if pairing is None else cache_key(run_dir, RUN_LOGS, orders=list(pairing))
    answers = recall(run_dir, "answers", answers_key, _KEPT) if pairing else None
    # Answers that must be read mean reading both logs: the kept outputs are not loaded then.
    must_read = pairing is not None and answers is None
    if answers is not None and digest is not None:
        digest(answers, manifest)
        answers = None  # dropped before the outputs are decoded
    kept = None if must_read else recall(run_dir, "logs", key, _KEPT)
    if kept is not None:
        outputs, requests = kept
        return outputs, requests, answers

    def taken(found: AnswerLog) -> AnswerLog | None:
        jobs = found.names["job"]  # compact (``CompactNames``) as the join leaves them
        if cache_enabled():  # kept as strings, then compact again for the digest
            found.names["job"] = tuple(jobs)
            keep(run_dir, "answers", answers_key, found)
            found.names["job"] = jobs
        if digest is None:  # handed back: the job names as strings
            found.names["job"] = tuple(jobs)
            return found
        digest(found, manifest)
        return None  # dropped

    outputs, requests, answers = read_logs(
        run_dir, pairing, manifest.run_id, taken, apart=digest is not None
    )
    keep(run_dir, "logs", key, (outputs, requests))
    return outputs, requests, answers
