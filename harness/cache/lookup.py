"""Lookups and stores of the request cache, as the ``Caller`` uses them (docs/cache.md,
"What is a hit": why an exchange's occasion is in its key, and why a hit names the served
model and is never served for another model spec)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import orjson

from harness.cache.keys import Key, Keyer, keyer
from harness.cache.leases import TICK_S, Claim, Flight
from harness.cache.store import Entry, Store, answer_digest, default_path
from harness.calling.attempt import Attempt
from harness.errors import BackendError, ConfigError
from harness.wire.answers import read_answers
from runfolder import Usage

MODES = ("auto", "read-write", "read-only", "off")
WAIT_S = 0.05  # how often a process waiting on another's lease looks for the answer
# A user's choice of mode from the environment: read once by the command line, where
# --cache and the settings files leave it unset (``harness.running.settings``).
MODE_ENV = "NUMERICJEV_CACHE_MODE"
_Found = asyncio.Future[tuple[Key, Attempt | None]]  # a ``find``'s key and hit, as its pass ends


@dataclass
class RequestCache:
    """One process's view of the cache for one run: lookups, stores and their counts."""

    store: Store
    writable: bool
    spec: Mapping[str, Any]
    run_id: str
    hits: int = 0
    misses: int = 0
    saved_usd: float = 0.0
    lookup_s: float = 0.0  # CPU time spent in lookups and stores (the bench reports it)
    _model: str = field(default="")
    key: Keyer = field(init=False, repr=False)  # (body, occasion) -> its key in this file
    waited: int = 0  # hits that another process was asking when this one missed
    failed: set[Key] = field(default_factory=set, repr=False)  # answers that failed their digest
    # Answers saved and not yet stored, by key (made table rows in the commit that stores
    # them: ``_commit``), the jobs they answer, and the job of each miss being asked
    _pending: dict[Key, Attempt] = field(default_factory=dict, repr=False)
    _queued: set[str] = field(default_factory=set, repr=False)
    _jobs: dict[Key, str] = field(default_factory=dict, repr=False)
    _due: bool = False  # an answer saved that is stored as this pass ends (no job known)
    _releases: list[Key] = field(default_factory=list, repr=False)  # leases to give back
    _claims: list[tuple[Key, asyncio.Future[Claim]]] = field(default_factory=list, repr=False)
    # ``find``s of this pass, answered as it ends
    _asks: list[tuple[Mapping[str, Any], str, _Found]] = field(default_factory=list, repr=False)
    _flight: Flight = field(default_factory=Flight, repr=False)
    _scheduled: bool = False
    _ticking: bool = False
    _look_due: bool = False
    _closed: bool = False

    def __post_init__(self) -> None:
        """The model name entries are filed under (``cache prune --model``), and the spec's
        share of every key, hashed once."""
        self._model = str(self.spec.get("name", ""))
        self.key = keyer(self.spec, self.store.version)
        if self.writable:
            self._flight.join(self.store.db)

    async def find(self, body: Mapping[str, Any], occasion: str = "") -> tuple[Key, Attempt | None]:
        """``body``'s key (computed once per exchange: find, then save) and its cached answer
        as an answered attempt costing 0, or None (a miss), from the pass's one ``SELECT``
        (``_answer``). Untimed here (an append costs less than a clock pair's ~1 us)."""
        future: _Found = asyncio.get_running_loop().create_future()
        self._asks.append((body, occasion, future))
        self._schedule()
        key, hit = await future
        if hit is None:
            self.misses += 1
        return key, hit

    def _answer(self) -> None:
        """The pass's ``find``s keyed and answered from one ``SELECT`` (hits counted)."""
        asks, self._asks = self._asks, []
        key = self.key
        asked: list[tuple[Key, Mapping[str, Any], str, _Found]] = []
        for body, occasion, future in asks:
            try:
                asked.append((key(body, occasion), body, occasion, future))
            except Exception as exc:  # a body that is not JSON: raised in its own exchange
                if not future.done():
                    future.set_exception(exc)
        keys = [k for k, _, _, _ in asked]
        try:
            if self._pending and not self._pending.keys().isdisjoint(keys):
                self._commit()  # an answer still queued here is read from the file
            entries = self.store.get_many(keys)
        except BaseException as exc:
            for _, _, _, future in asked:
                if not future.done():
                    future.set_exception(exc)
            return
        jobs = self._jobs
        for k, body, occasion, future in asked:
            if future.done():  # its exchange was cancelled meanwhile
                continue
            entry = entries.get(k)
            hit = None if entry is None else self._hit(entry, body)
            if hit is None:  # asked live: its answer is queued under its job (``save``), the
                # scheduler's JOB#ROUND less the round (none: one job with every other such)
                jobs[k] = occasion.rpartition("#")[0]
            future.set_result((k, hit))

    def _hit(self, entry: Entry, body: Mapping[str, Any]) -> Attempt | None:
        """``entry`` as a hit for ``body`` (counted), or None where it no longer reads or
        its answer is not the one stored (its digest: asked again, and replaced)."""
        if not entry.intact:
            self.failed.add(entry.key)
            return None
        hit = _replay(entry, body)
        if hit is not None:
            self.hits += 1
            self.saved_usd += entry.cost_usd or 0.0
        return hit

    def _reread(self, key: Key, body: Mapping[str, Any]) -> Attempt | None:
        """The stored answer under a known ``key`` as a hit (counted), or None; timed,
        without counting a miss."""
        t0 = time.process_time()
        if key in self._pending:
            self._commit()  # queued here: read from the file
        self._schedule()
        self.store.begin_read()  # one read transaction for the pass's lookups
        entry = self.store.get(key)
        hit = None if entry is None else self._hit(entry, body)
        self.lookup_s += time.process_time() - t0
        return hit

    async def claim(self, key: Key, body: Mapping[str, Any]) -> Attempt | None:
        """After a miss: None once this process holds the key's lease (it asks), or the
        answer another process was asking, waited for (single flight, ``harness.cache.leases``).
        Read-only, no lease is taken: the miss is asked."""
        if not self.writable or not self._flight.ask(key):
            return None  # read-only, or alone with the file: asked without a lease
        while True:
            found = await self._claim(key)
            if found is Claim.MINE:
                return None
            if found is Claim.HELD:
                await anyio.sleep(WAIT_S)
            hit = self._reread(key, body)
            if hit is not None:
                self._jobs.pop(key, None)  # not asked here: nothing to save
                self.misses -= 1  # counted a miss when first asked: it was a hit after all
                self.waited += 1
                return hit
            if found is Claim.STORED:
                return None  # stored but no longer readable as an answer: asked again

    async def _claim(self, key: Key) -> Claim:
        """Try the key's lease in the write transaction that ends this pass."""
        future: asyncio.Future[Claim] = asyncio.get_running_loop().create_future()
        self._claims.append((key, future))
        self._schedule()
        return await future

    def release(self, key: Key, asked: bool = True) -> None:
        """Give back ``key``'s lease (its exchange failed or was cut off) as the pass ends;
        not ``asked`` (the request cap stopped it before it was sent): not a miss."""
        if not asked:
            self.misses -= 1
        self._jobs.pop(key, None)
        if self.writable and self._flight.done(key):
            self._releases.append(key)
            self._schedule()

    def save(self, key: Key, attempt: Attempt) -> None:
        """Queue a live answer that passed validation with every question answered, to be
        stored (and its lease given back) by the next commit (``_schedule``); untimed, as
        ``find``: its row is made in the commit, which is timed."""
        if not self.writable or attempt.cached:
            return
        if attempt.refused or attempt.kind is not None:
            self.release(key)  # errors, refusals and partial answers are never stored
            return
        job = self._jobs.pop(key, None)
        if job in self._queued:
            try:
                self.commit()  # the job's previous round first: a kill loses only its latest
            except sqlite3.Error as exc:  # as a pass's commit: reported, and the run goes on
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "the request cache could not store answers", "exception": exc}
                )
        self._pending[key] = attempt
        if job is None:
            self._due = True  # not an exchange ``find`` keyed: stored as its pass ends
        else:
            self._queued.add(job)
        if self._flight.done(key):
            self._releases.append(key)  # in the answer's own transaction, as the pass ends
        self._schedule()

    def _schedule(self) -> None:
        """Have ``_end_pass`` run as this event-loop pass ends: its ``find``s answered by one
        ``SELECT``, its read transaction ended (none is held across an ``await``); answers wait
        in ``_pending`` until a commit docs/cache.md ("Safety") lists is due (issue 29)."""
        if not self._scheduled:
            loop = asyncio.get_running_loop()
            loop.call_soon(self._end_pass, loop)
            self._scheduled = True
            if not self._ticking and self.writable:
                self._ticking = True
                loop.call_later(TICK_S, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look for other processes even when this one stores nothing (``leases.TICK_S``)."""
        if self._closed:
            return
        self._look_due = True
        self.commit()
        loop.call_later(TICK_S, self._tick, loop)

    def _end_pass(self, loop: asyncio.AbstractEventLoop) -> None:
        """As an event-loop pass ends: its read transaction ended, its writes committed."""
        if self._closed:  # closed within this pass: ``close`` committed everything
            return
        t0 = time.process_time()
        self._scheduled = False
        if self._asks:
            self._answer()
        self.store.end_read()
        if self._due or self._releases or self._claims or self._look_due:
            self._commit()
        self.lookup_s += time.process_time() - t0

    def commit(self) -> None:
        """Store the answers saved since the last commit, in one transaction."""
        t0 = time.process_time()
        self._commit()
        self.lookup_s += time.process_time() - t0

    def _commit(self) -> None:
        self._scheduled = False
        self.store.end_read()
        pending, self._pending = self._pending, {}
        self._queued.clear()
        self._due = False
        releases, self._releases = self._releases, []
        claims = [(k, f) for k, f in self._claims if not f.cancelled()]
        self._claims = []
        look, self._look_due = self._look_due, False
        if not (pending or releases or claims or look):
            return
        now, model, run, dumps = time.time(), self._model, self.run_id, orjson.dumps
        rows = [
            (
                key, model, a.model, response,
                None if a.usage is None else dumps(a.usage).decode(), a.cost_usd, now, run,
                answer_digest(response),
            )  # ``Entry.row``
            for key, a in pending.items()
            for response in (a.response_json or dumps(a.response),)
        ]  # fmt: skip
        try:
            found = self.store.write(rows, releases, [k for k, _ in claims], self._flight, look)
        except BaseException as exc:
            for _, future in claims:
                if not future.done():
                    future.set_exception(exc)
            raise
        for key, future in claims:
            if not future.done():
                future.set_result(found[key])

    def close(self) -> None:
        """Store what is queued and give back every lease still held, then close the file."""
        if self._asks:  # none should be left as a run ends; answered rather than left hanging
            self._answer()
        self.commit()
        self._closed = True
        if self.writable:
            with suppress(sqlite3.Error):  # else they expire, or are found dead
                self._flight.leave(self.store.db)
        self.store.close()

    def summary(self) -> str:
        """One line for the run's summary: hits, misses (asked live), USD saved, and the
        cached answers that failed their check."""
        failed = f"; {len(self.failed)} cached answers failed their check and were asked again"
        return (
            f"cache {self.store.path}: {self.hits} hits, {self.misses} misses, "
            f"${self.saved_usd:.4f} saved; {self.waited} waited for another process; "
            f"lookup CPU {self.lookup_s * 1e3:.1f} ms{failed if self.failed else ''}"
        )


def _replay(entry: Entry, body: Mapping[str, Any]) -> Attempt | None:
    """A cached entry as an answered attempt, validated again as a live one; None if the
    entry no longer passes (the reading rules changed): it is then asked live again."""
    response = orjson.loads(entry.response)
    try:
        read = read_answers(body["questions"], response)
    except BackendError:
        return None
    if read.refused:
        return None
    usage = None if entry.usage is None else cast(Usage, orjson.loads(entry.usage))
    return Attempt(
        1, time.time(), 0.0, 200, None, None, response, entry.served, usage, 0.0, None,
        read.answers, None, None, None, entry.response,
        {"hit": True, "from_run": entry.run, "saved_usd": entry.cost_usd},
    )  # fmt: skip


# Models answered in this process for free; a local GGUF model is slow, so it is cached.
IN_PROCESS_BACKENDS = frozenset({"sim", "oracle"})


def open_cache(spec: Mapping[str, Any], run_id: str, mode: str) -> RequestCache | None:
    """The run's cache for the model ``spec`` under ``mode`` (one of ``MODES``: a run's
    ``RunSettings.cache``), or None when it is off. ``auto``: off for in-process models (an
    answer costs microseconds to make again), read-write for everything else."""
    if mode not in MODES:
        raise ConfigError(f"--cache must be one of {', '.join(MODES)}; got {mode!r}")
    if mode == "auto":
        mode = "off" if spec.get("backend") in IN_PROCESS_BACKENDS else "read-write"
    if mode == "off" or (mode == "read-only" and not default_path().exists()):
        return None  # read-only and no cache yet: every exchange is a miss
    store = Store(default_path(), readonly=mode == "read-only")
    return RequestCache(store, mode == "read-write", spec, run_id)
