"""One line per run folder, cheaply: what ``numericjev list`` and a comparison's status show.

Read per run: ``manifest.json``, ``outputs.jsonl`` (jobs counted as ``status`` counts them)
and ``totals.json`` (lower bounds, ``>=``, where the log has grown since; ``?`` without
totals: docs/comparing.md, "Finding runs"), never the 1.5 GB ``requests.jsonl``. Each line's
run id is checked as every reader checks it: a folder holding another run's line is shown
as unreadable, naming the line. A ``compare --sequential`` comparison its rule stopped says
so, and at which look, rather than INCOMPLETE (``runfolder.sequential_stop``), as do its cells.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from runfolder.comparison import is_comparison, load_comparison
from runfolder.errors import RunFolderError
from runfolder.jsonl import JsonlReader
from runfolder.layout import OUTPUTS
from runfolder.manifest import read_manifest_object
from runfolder.sequential_stop import SequentialStop, sequential_stop
from runfolder.totals import read_totals, totals_current

NOT_STARTED = "not started"  # a comparison's cell with no run folder yet


@dataclass(frozen=True)
class RunRow:
    """What ``list`` shows of one run folder (or, summed over its cells, of a comparison)."""

    folder: Path
    suite: str
    model: str
    started: str
    jobs: int | None  # the manifest's n_jobs
    done: int
    failed: int
    requests: int | None  # answered requests; None: unknown (no totals)
    cost_usd: float | None
    exact: bool  # False: requests and cost are lower bounds (a session was killed)
    mark: str  # "simulated", "oracle" (exact labels) or "" (a served model)
    problem: str | None = None  # why the folder could not be read
    cost_known: bool = True  # False: some answered request had no price (cost_usd a floor)
    cells: tuple[RunRow, ...] = ()  # a comparison's runs
    # Said instead of INCOMPLETE: a sequential comparison (or its cell) its rule stopped.
    stopped: str | None = None

    @property
    def pending(self) -> int | None:
        """Jobs neither done nor failed (None when the total is unknown)."""
        return None if self.jobs is None else max(self.jobs - self.done - self.failed, 0)

    @property
    def complete(self) -> bool:
        """Every job done."""
        return self.problem is None and self.jobs is not None and self.done == self.jobs

    def line(self) -> str:
        """The row as ``list`` prints it."""
        if self.problem is not None:
            return f"{self.folder}  unreadable: {self.problem}"
        bound = "" if self.exact else ">="
        requests = "?" if self.requests is None else f"{bound}{self.requests:,}"
        cost = "?" if self.cost_usd is None else f"{bound}USD {self.cost_usd:.4f}"
        if self.cost_usd is not None and not self.cost_known:
            cost += " + unknown"  # as status says it: some requests had no price
        total = "?" if self.jobs is None else f"{self.jobs:,}"
        pending = "?" if self.pending is None else f"{self.pending:,}"
        model = self.model + (f" ({self.mark})" if self.mark else "")
        when = self.started if self.started == NOT_STARTED else f"started {self.started}"
        return (
            f"{self.folder}  {self.suite}  {model}  {when}  "
            f"jobs {self.done:,}/{total} done, {self.failed:,} failed, {pending} pending  "
            f"requests {requests}  cost {cost}  "
            + ("complete" if self.complete else self.stopped or "INCOMPLETE")
        )


def mark_of(model: dict[str, Any]) -> str:
    """How a manifest's model is labelled: "oracle" for exact labels (whatever an older
    manifest's ``simulated`` says), "simulated" for the simulator, else ""."""
    if model.get("backend") == "oracle" or model.get("oracle") is True:
        return "oracle"
    return "simulated" if model.get("simulated") is True else ""


def _served_mark(folder: Path) -> str:
    """The mark the first output line carries: a served model's manifest cannot say that a
    server naming itself ``sim`` (serve-sim) or ``oracle`` answered; its outputs do."""
    for record in JsonlReader[dict[str, Any]](folder / OUTPUTS):
        if record.get("oracle") is True:
            return "oracle"
        return "simulated" if record.get("simulated") is True else ""
    return ""


_JOB = b'{"job":"'
_DECODER = b'"decoder":"'
_STATUS = b'"status":"'


def _text_after(line: bytes, key: bytes, at: int) -> str | None:
    """The string value that starts after ``key`` found at ``at`` (None: not plain text)."""
    start = at + len(key)
    end = line.find(b'"', start)
    value = line[start:end]
    return None if end < 0 or b"\\" in value else value.decode()


def job_status(
    folder: Path, decoders: tuple[str, ...], run_id: str | None = None
) -> tuple[set[str], set[str]]:
    """Jobs done and failed by ``outputs.jsonl`` (the last line of each job × decoder wins).

    Fast: a line as the harness writes it (compact, ``job`` first, ``status`` after the
    trace) is read for those three fields without parsing it; any other line is parsed.
    Either way the one reader's torn-line rule applies. With ``run_id`` (the manifest's),
    each line's run id is checked as every reader checks it (``JsonlReader``'s ``run``): a
    line of another run raises ``ForeignLineError``.
    """
    last: dict[str, dict[str, Any]] = defaultdict(dict)
    key = None if run_id is None else b'"run":' + orjson.dumps(run_id)

    def scan(line: bytes) -> bool:
        # True: not in the writer's form (or not visibly this run's), so the reader parses
        # it and it is read (and its run id checked) below.
        if not line.startswith(_JOB) or (key is not None and key not in line):
            return True
        at_decoder, at_status = line.find(_DECODER), line.rfind(_STATUS)
        if at_decoder < 0 or at_status < 0:
            return True
        job = _text_after(line, _JOB, 0)
        decoder = _text_after(line, _DECODER, at_decoder)
        status = _text_after(line, _STATUS, at_status)
        if job is None or decoder is None or status is None:
            return True
        last[job][decoder] = status
        return False

    for record in JsonlReader[dict[str, Any]](folder / OUTPUTS, keep=scan, run=run_id, legacy=True):
        last[str(record.get("job"))][str(record.get("decoder"))] = record.get("status")
    done = {job for job, status in last.items() if all(status.get(d) == "ok" for d in decoders)}
    return done, set(last) - done


def run_row(folder: Path) -> RunRow:
    """The row of one run folder; a folder that cannot be read gets a row saying why."""
    try:
        manifest = read_manifest_object(folder)
        decoders = tuple(str(d) for d in manifest.get("decoders") or ())
        run_id = manifest.get("run_id")
        done, failed = job_status(folder, decoders, run_id if isinstance(run_id, str) else None)
    except (RunFolderError, OSError) as exc:
        return RunRow(folder, "?", "?", "?", None, 0, 0, None, None, False, "", str(exc))
    model: dict[str, Any] = manifest["model"] if isinstance(manifest.get("model"), dict) else {}
    totals = read_totals(folder)
    jobs = manifest.get("n_jobs")
    return RunRow(
        folder=folder,
        suite=str(manifest.get("suite")),
        model=str(model.get("label") or model.get("name")),  # a sim's knobs (sim:seed=7)
        started=str(manifest.get("created_utc")),
        jobs=jobs if isinstance(jobs, int) else None,
        done=len(done),
        failed=len(failed),
        requests=None if totals is None else totals["requests"],
        cost_usd=None if totals is None else totals["cost_usd"],
        exact=totals is not None and totals_current(folder, totals),
        mark=mark_of(model) or _served_mark(folder),
        cost_known=totals is None or totals["cost_known"],
    )


def _comparison_row(folder: Path) -> RunRow:
    try:
        record = load_comparison(folder)
    except RunFolderError as exc:
        return RunRow(folder, "?", "?", "?", None, 0, 0, None, None, False, "", str(exc))
    cells = tuple(
        replace(run_row(folder / c["folder"]), model=c["model"])
        if (folder / c["folder"] / "manifest.json").is_file()
        else RunRow(
            folder / c["folder"],
            c["suite"],
            c["model"],
            NOT_STARTED,
            None,
            0,
            0,
            0,
            0.0,
            True,
            "",
        )
        for c in record["cells"]
    )
    known = [c for c in cells if c.problem is None]
    stop = sequential_stop(folder, record)
    if stop is not None:  # the families pending in every cell were left by the rule
        cells = tuple(replace(c, stopped=stop.cell_line()) for c in cells)

    def total(values: list[Any]) -> Any:
        return None if any(v is None for v in values) else sum(values)

    return RunRow(
        folder=folder,
        suite=",".join(record["suites"]),
        model=",".join(record["models"]),
        started=record["created_utc"],
        jobs=total([c.jobs for c in known]) if len(known) == len(cells) else None,
        done=sum(c.done for c in known),
        failed=sum(c.failed for c in known),
        requests=total([c.requests for c in known]),
        cost_usd=total([c.cost_usd for c in known]),
        exact=all(c.exact for c in known),
        cost_known=all(c.cost_known for c in known),
        mark=", ".join(["comparison", *sorted({c.mark for c in known if c.mark})]),
        cells=cells,
        stopped=None if stop is None else stop.line(),
    )


def list_rows(folders: list[Path]) -> list[RunRow]:
    """A row per folder (run or comparison), in the order given; a comparison's cell listed
    on its own (``list COMPARISON``) reads as it does under its comparison."""
    stops: dict[Path, SequentialStop | None] = {}

    def row(folder: Path) -> RunRow:
        if is_comparison(folder):
            return _comparison_row(folder)
        if not is_comparison(folder.parent):
            return run_row(folder)
        parent = folder.parent
        if parent not in stops:
            try:
                stops[parent] = sequential_stop(parent, load_comparison(parent))
            except RunFolderError:
                stops[parent] = None
        cell, stop = run_row(folder), stops[parent]
        return cell if stop is None else replace(cell, stopped=stop.cell_line())

    return [row(f) for f in folders]
