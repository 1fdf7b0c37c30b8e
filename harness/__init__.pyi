"""The harness's public names (``__init__.py``: each loaded on first use)."""

from .backends import Backend, ModelSpec, Reply, make_backend
from .backends.systemone import SystemOneBackend
from .calling import Attempt, Limits, RetrySettings
from .errors import (
    AuthError,
    BackendError,
    BudgetExhausted,
    ConfigError,
    ExpressionError,
    GridError,
    ManifestMismatch,
    NumericJevError,
    TransientError,
)
from .errors import RunFolderError as RunFolderError
from .progress import Counters
from .protocol.cases import Case, JobSpec, Suite
from .protocol.decoders import Answer, Decoded, Decoder, Question, make_decoder
from .protocol.grid import Grid
from .protocol.registry import SuiteBuilder, load_suite, register_suite, suite_names
from .running.jobs import Job
from .running.session import Placement, RunResult, resume, resume_async, run, run_async
from .running.settings import RunSettings
from .running.sharding import Shard
from .spreading.merging import Merged, merge
from .spreading.pool import Pool
from .spreading.raylaunch import Ray
from .spreading.spread import Shards

__all__ = [
    "Answer",
    "Attempt",
    "AuthError",
    "Backend",
    "BackendError",
    "BudgetExhausted",
    "Case",
    "ConfigError",
    "Counters",
    "Decoded",
    "Decoder",
    "ExpressionError",
    "Grid",
    "GridError",
    "Job",
    "JobSpec",
    "Limits",
    "ManifestMismatch",
    "Merged",
    "ModelSpec",
    "NumericJevError",
    "Placement",
    "Pool",
    "Question",
    "Ray",
    "Reply",
    "RetrySettings",
    "RunResult",
    "RunSettings",
    "Shard",
    "Shards",
    "Suite",
    "SuiteBuilder",
    "SystemOneBackend",
    "TransientError",
    "load_suite",
    "make_backend",
    "make_decoder",
    "merge",
    "register_suite",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "suite_names",
]
