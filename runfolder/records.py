"""The records of a run folder's logs, as TypedDicts.

TypedDicts rather than dataclasses: a record read back is the dict orjson returns, so reading
a 1.5 GB log costs nothing extra, and mypy still checks every place a record is built. The
field order of each class is the key order on disk (``job`` first: resume filters raw lines
on that prefix without parsing them).

Two stages per log: the harness builds an ``ExchangeRecord`` / ``OutputRecord``; the writer
that owns the run folder stamps the run id and writes a ``RequestLine`` / ``OutputLine``.
Readers get the ``*Line`` types. A reader of a hand-edited or older log still meets records
that lack a field: code that must not trust the file (analysis, status) reads with ``.get``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, get_args

# Why an exchange attempt failed. One kind per row of the wire table (retry.classify), plus
# those raised from bodies and in-process backends, plus "error" for an attempt a backend
# reported without a kind. tests/test_runfolder.py fails if the harness writes any other.
# "refusal" marks an ANSWERED attempt in which the model declined some questions: final,
# never retried, replayed by resume like any answer (docs/models.md, "Refusals").
ErrorKind = Literal[
    "rate_limited",  # 429
    "server_error",  # other 5xx
    "overloaded",  # 503, 529
    "timeout",  # 408, client timeout
    "connection",  # transport error, bad URL scheme
    "malformed",  # a 2xx body that is not JSON or does not answer every question
    "auth",  # 401, 403: the run stops
    "redirect",  # 3xx (a POST is not redirected: the base URL is wrong)
    "http_4xx",  # any other 4xx
    "bad_body",  # a request body that cannot be serialised
    "bad_request",  # a question an in-process backend cannot read
    "unexpected",  # anything else (not retried)
    "refusal",  # answered, but the model declined some questions (never retried): see below
    "error",  # a failed attempt reported without a kind
]
ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))

OutputStatus = Literal["ok", "failed"]
SessionCommand = Literal["run", "resume", "merge"]  # merge: seals the merged parent


def error_kind(kind: str) -> ErrorKind:
    """``kind`` as an ``ErrorKind``; an unknown name is kept as it is, never replaced.

    The closed set is enforced by a test over the harness sources, not here: rewriting an
    unknown kind at run time would lose what the backend said.
    """
    return kind  # type: ignore[return-value]


class ErrorInfo(TypedDict):
    """``requests.jsonl``'s ``error``: why an attempt failed."""

    kind: ErrorKind
    message: str


class Usage(TypedDict, total=False):
    """Token counts as the server reported them (a server may add other counts)."""

    input_tokens: int
    output_tokens: int


class ExchangeRecord(TypedDict):
    """One exchange attempt as the scheduler builds it (a ``RequestLine`` without ``run``)."""

    job: str
    round: int
    t: float  # epoch seconds when the request started, to the millisecond
    request: Mapping[str, Any]  # the System One body the decoders asked (replay compares it)
    # The exact body sent when the wire is not System One (``--wire``): a Decisions body, or
    # {qid: chat-completions body}; absent on System One, where ``request`` is what was sent.
    sent: NotRequired[Any]
    qmap: dict[str, str]  # wire question id -> "decoder/step"
    attempt: int  # 1-based
    latency_ms: float | None
    status: int | None  # HTTP status (200 for in-process backends); None: no response
    response: Any  # the parsed body when answered; a failed response's raw text, or None
    error: ErrorInfo | None  # None exactly when the attempt was answered
    model: str | None  # the model the server says answered
    usage: Usage | None
    cost_usd: float | None  # None: unknown
    request_id: str | None


class RequestLine(ExchangeRecord):
    """A ``requests.jsonl`` line."""

    run: str  # the manifest's run_id: resume refuses a line copied from another run
    seq: int  # the record's number in the run, shared with outputs.jsonl (runfolder.sequence)


class TraceStep(TypedDict, total=False):
    """One decision of a decoder's trace; the fields beyond ``round`` depend on the decoder."""

    round: int
    choice: str  # the option label chosen
    value: str  # direct: the value chosen
    interval: list[str]  # tree, thresholds: [lo, hi) after this step
    parent: list[str]  # tree: the interval this step partitioned
    k: int  # tree: how many children the parent had
    place: str  # digits: the decimal place this step read
    threshold: str  # thresholds: the value asked about
    p: float  # CDF decoders: the probability read at ``threshold``


class OutputIdentity(TypedDict):
    """The fields that say which job, case and decoder an output line belongs to."""

    job: str
    suite: str
    case: str
    family: int | str
    domain: str
    condition: str
    order: str
    repeat: int
    decoder: str
    target: str  # exact decimal text, as are L, eps, value and cell
    L: str
    eps: str
    N: int


class OutputResult(OutputIdentity):
    """An output's read-out (all None and an empty trace when the decoder did not finish)."""

    value: str | None
    cell: list[str] | None
    rounds: int | None
    trace: list[TraceStep]


class OutputRecord(OutputResult):
    """One (job, decoder) result as a job builds it (an ``OutputLine`` without ``run``)."""

    extra: NotRequired[dict[str, Any]]  # decoder-specific facts (index, digits, CDF masses)
    status: OutputStatus
    simulated: bool  # answered by the built-in simulator
    error: NotRequired[ErrorKind]  # a failed output: the kind of the attempt that failed it
    oracle: NotRequired[bool]  # answered with exact labels by the oracle (then not simulated)


class ImportedFrom(TypedDict):
    """Where an imported prediction came from (``numericjev import-predictions``)."""

    file: str
    sha256: str


class OutputLine(OutputRecord):
    """An ``outputs.jsonl`` line."""

    run: str
    imported: NotRequired[ImportedFrom]
    seq: int  # the record's number in the run, shared with requests.jsonl; the last key


class LimitsRecord(TypedDict):
    """What bounded a run or one session of it."""

    concurrency: int
    rps: float | None
    max_requests: int | None  # requests sent by one invocation
    max_cost_usd: float | None  # the run's total recorded cost, all sessions included
    # Seconds 429 replies may pause one invocation in total before it stops (absent in runs
    # made before the ceiling).
    max_wait_s: NotRequired[float | None]


class SessionRecord(TypedDict):
    """A ``sessions.jsonl`` line: one ``run`` or ``resume`` invocation, written as it starts
    (and at a merged parent, one ``merge`` line sealing its manifest: ``harness.spreading.merging``).

    The manifest is written once; what changes between sessions (code, limits, URL, the
    mismatches ``--allow-mismatch`` let through) is recorded here.
    """

    utc: str  # ISO 8601, seconds
    command: SessionCommand
    harness_version: str
    source_hash: str  # of the code running this session (the manifest has the first one's)
    model: str
    base_url: str | None  # scrubbed of credentials
    limits: LimitsRecord
    allowed_mismatches: list[str]  # problems --allow-mismatch let through; [] if none
    run: str
    # The seal of the manifest this session ran under (runfolder.seal); absent in older runs.
    manifest_sha256: NotRequired[str]
    manifest_fields: NotRequired[dict[str, str]]
