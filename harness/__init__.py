"""NumericJev's harness: run suites of numerical read-outs against decision models.

The front door, for code that runs suites (the benchmarks, a notebook, a service)::

    from harness import Limits, ModelSpec, load_suite, run

    result = run(load_suite("affine"), ModelSpec("sim"), Limits(concurrency=64))
    print(result.folder, result.counters.requests)

``resume`` continues a run; ``run_async`` / ``resume_async`` do the same inside a running
event loop. Where the jobs are answered is ``run``'s and ``resume``'s ``placement``: here
(the default), a ``Pool`` of local processes for a sim or oracle run (one run folder),
``Shards`` (one shard of a run split over machines with ``index``, else all of them in local
processes; ``merge`` makes the shards one run folder again) or ``Ray``. Suites
are plugins (``register_suite``, or the ``numericjev.suites`` entry points); a model is a
``ModelSpec`` or any object that implements the ``Backend`` protocol (one attempt per call).
A ``Job`` builds one job's requests and reads its answers, for code that drives a model
itself. ``harness.wire`` (wire-format translations) has its own ``__all__``. Everything else
in the package is internal and may change.

The names below are loaded on first use, so that ``import harness.cli`` (and ``--help``)
stays fast.
"""

from __future__ import annotations

import importlib
import typing

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

# Where each public name is defined. RunFolderError is runfolder's class, re-exported by
# harness.errors: reachable here too, but listed in runfolder's __all__, not this one.
_HOMES = {
    **dict.fromkeys(
        ["Placement", "RunResult", "resume", "resume_async", "run", "run_async"],
        "harness.running.session",
    ),
    **dict.fromkeys(["Backend", "ModelSpec", "Reply", "make_backend"], "harness.backends"),
    **dict.fromkeys(["Attempt", "Limits", "RetrySettings"], "harness.calling"),
    **dict.fromkeys(["Case", "JobSpec", "Suite"], "harness.protocol.cases"),
    **dict.fromkeys(
        ["SuiteBuilder", "load_suite", "register_suite", "suite_names"], "harness.protocol.registry"
    ),
    **dict.fromkeys(
        ["Answer", "Decoded", "Decoder", "Question", "make_decoder"], "harness.protocol.decoders"
    ),
    **dict.fromkeys(
        [
            "AuthError",
            "BackendError",
            "BudgetExhausted",
            "ConfigError",
            "ExpressionError",
            "GridError",
            "ManifestMismatch",
            "NumericJevError",
            "RunFolderError",
            "TransientError",
        ],
        "harness.errors",
    ),
    **dict.fromkeys(["Merged", "merge"], "harness.spreading.merging"),
    "Pool": "harness.spreading.pool",
    "Shards": "harness.spreading.spread",
    "Ray": "harness.spreading.raylaunch",
    "Shard": "harness.running.sharding",
    "RunSettings": "harness.running.settings",
    "SystemOneBackend": "harness.backends.systemone",
    "Grid": "harness.protocol.grid",
    "Job": "harness.running.jobs",
    "Counters": "harness.progress",
}


def __getattr__(name: str) -> typing.Any:
    """Import a public name's module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


if typing.TYPE_CHECKING:
    from harness.backends import Backend, ModelSpec, Reply, make_backend
    from harness.backends.systemone import SystemOneBackend
    from harness.calling import Attempt, Limits, RetrySettings
    from harness.errors import (
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
    from harness.errors import (
        RunFolderError as RunFolderError,
    )
    from harness.progress import Counters
    from harness.protocol.cases import Case, JobSpec, Suite
    from harness.protocol.decoders import Answer, Decoded, Decoder, Question, make_decoder
    from harness.protocol.grid import Grid
    from harness.protocol.registry import SuiteBuilder, load_suite, register_suite, suite_names
    from harness.running.jobs import Job
    from harness.running.session import (
        Placement,
        RunResult,
        resume,
        resume_async,
        run,
        run_async,
    )
    from harness.running.settings import RunSettings
    from harness.running.sharding import Shard
    from harness.spreading.merging import Merged, merge
    from harness.spreading.pool import Pool
    from harness.spreading.raylaunch import Ray
    from harness.spreading.spread import Shards
