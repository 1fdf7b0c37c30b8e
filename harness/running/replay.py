"""Rebuilding a run's state from its logs: finished jobs, recorded answers, earlier spend,
and the queue of unfinished jobs, each replayed up to where it stopped.

Resume reads ``outputs.jsonl`` for finished jobs and replays each unfinished job's answered
exchanges through fresh decoders, which are pure: a replayed job that asks otherwise means
the code changed, and resume refuses rather than mix two versions in one job. A refusal was
answered: it is replayed like any answer, and a job whose decoders are all ok or failed by a
refusal is finished. Both logs are read by the one reader and their numbering checked
(``runfolder.sequence``) before anything is sent.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import BackendError, ManifestMismatch
from harness.progress import Counters
from harness.protocol.cases import JobSpec, Suite
from harness.running.jobs import Job
from harness.running.sharding import Shard
from harness.wire.answers import read_answers
from runfolder import (
    OUTPUTS,
    REQUESTS,
    JsonlReader,
    OutputLine,
    RequestLine,
    check_sequence,
)

FINAL = "failed:refusal"  # a decoder's last status when a refusal failed it for good
# A run's unfinished jobs: those replayed from the log, then the specs of jobs never asked.
JobLists = tuple[list[Job], list[JobSpec]]


@dataclass
class LogState:
    """What the logs of a run folder say, reduced to what resume and status need."""

    finished: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    answered: dict[str, dict[int, RequestLine]] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    outputs_end: int = 0
    requests_end: int = 0
    torn: list[str] = field(default_factory=list)
    duplicates: int = 0  # (job, round) answered more than once
    repeated_lines: int = 0  # lines that repeat a record (same seq), skipped
    next_seq: int = 1  # the number the next record gets
    # Unfinished jobs' decoders whose last output is ok: not written again on resume.
    recorded_ok: dict[str, frozenset[str]] = field(default_factory=dict)

    def repairs(self) -> list[str]:
        """What reading the logs repaired, in words, for ``resume`` to say once (``status``
        notes the same; ``analyze`` and ``report``: their "Log repairs" row)."""
        said = [f"cut a torn last line from {name} (a crash mid-write)" for name in self.torn]
        if self.repeated_lines:
            said.append(
                f"{self.repeated_lines:,} repeated log line(s) (a record written twice) "
                "skipped: each record counted once"
            )
        return said


def read_logs(folder: Path, decoders: tuple[str, ...], run_id: str) -> LogState:
    """Scan both logs once, streaming; keeps recorded answers only for unfinished jobs."""
    state = LogState()
    last_status: dict[tuple[str, str], str] = {}
    outputs = JsonlReader[OutputLine](folder / OUTPUTS, run=run_id)
    for output in outputs:  # each line refused unless this run's (``run``)
        key = (str(output.get("job")), str(output.get("decoder")))
        status = str(output.get("status"))
        # A decoder failed by a refusal is final (never asked again): it counts as finished.
        last_status[key] = FINAL if output.get("error") == "refusal" else status
    per_job: dict[str, dict[str, str]] = defaultdict(dict)
    for (job, decoder), status in last_status.items():
        per_job[job][decoder] = status
    for job, statuses in per_job.items():
        if all(statuses.get(d) in ("ok", FINAL) for d in decoders):
            state.finished.add(job)
        else:
            state.failed.add(job)
            state.recorded_ok[job] = frozenset(d for d, s in statuses.items() if s == "ok")
    state.outputs_end = outputs.valid_bytes
    if outputs.torn:
        state.torn.append(OUTPUTS)

    finished = state.finished
    c = state.counters
    requests = JsonlReader[RequestLine](folder / REQUESTS, run=run_id)
    for record in requests:
        job = str(record.get("job"))
        error, cost = record.get("error"), record.get("cost_usd")
        kind = None
        if error:
            kind = str(error.get("kind", "error")) if isinstance(error, dict) else "error"
        # A refusal was answered, with some questions declined: replayed like any answer.
        answered = kind is None or kind == "refusal"
        cost = None if cost is None else float(cost)
        c.count(answered, kind, record.get("model"), record.get("usage"), cost)
        if not answered or job in finished:
            continue
        rounds = state.answered.setdefault(job, {})
        number = int(record.get("round") or 0)
        if number in rounds:
            state.duplicates += 1
            continue
        rounds[number] = record
    state.requests_end = requests.valid_bytes
    if requests.torn:
        state.torn.append(REQUESTS)
    state.next_seq = check_sequence(folder, requests, outputs) + 1
    state.repeated_lines = requests.duplicates + outputs.duplicates
    return state


def replay(job: Job, recorded: dict[int, RequestLine], model: str) -> int:
    """Feed a job its recorded answers round by round; returns how many rounds were replayed."""
    replayed = 0
    while (record := recorded.get(job.round + 1)) is not None:
        step = job.next_request(model)
        if step is None:
            break
        body, qmap = step
        sent = record.get("request") or {}
        if sent.get("questions") != body["questions"] or record.get("qmap") != qmap:
            raise ManifestMismatch(
                f"job {job.id} round {job.round + 1}: the recorded request differs from what "
                "this code asks now, so the decoders or prompts changed since the run started; "
                "start a new run for this code"
            )
        try:
            read = read_answers(body["questions"], record.get("response"))
        except BackendError:
            break  # an answer we cannot use is asked again, never guessed
        job.apply(qmap, read.answers, read.refused)
        if record.get("model"):
            job.served.add(str(record["model"]))
        replayed += 1
    return replayed


def shuffled_specs(suite: Suite) -> list[JobSpec]:
    """Jobs in an order shuffled with the suite seed (the paper fixes the job order)."""
    specs = suite.jobs()
    random.Random(suite.seed).shuffle(specs)
    return specs


def job_lists(
    suite: Suite,
    state: LogState,
    model: str,
    shard: Shard | None = None,
    families: frozenset[int] | None = None,
) -> JobLists:
    """Unfinished jobs (of ``shard`` only, if given; of ``families`` only: a sequential
    comparison's looks) as two lists in the shuffled order: the jobs with recorded answers
    (those cut short, or failed), replayed from the log, and the specs of jobs never asked.

    The replay is here, before anything is sent, so that a replay the code no longer
    matches is refused before the session starts (never part-way, after other jobs were
    asked); jobs never asked are built lazily (``jobs_of``), so memory grows with the jobs
    in progress, not the suite.
    """
    specs = [
        s
        for s in shuffled_specs(suite)
        if s.id not in state.finished
        and (shard is None or shard.holds_id(s.id))
        and (families is None or s.case.family in families)
    ]
    started: list[Job] = []
    fresh: list[JobSpec] = []
    for spec in specs:
        recorded = state.answered.get(spec.id)
        ok = state.recorded_ok.get(spec.id)
        if not recorded and not ok:
            fresh.append(spec)
            continue
        job = Job(spec, suite.decoders)
        job.recorded_ok = ok or frozenset()
        replay(job, recorded or {}, model)
        started.append(job)
    return started, fresh


def jobs_of(suite: Suite, started: list[Job], fresh: list[JobSpec]) -> Iterator[Job]:
    """The replayed jobs, then a new job for each spec, built as it is taken."""
    yield from started
    for spec in fresh:
        yield Job(spec, suite.decoders)
