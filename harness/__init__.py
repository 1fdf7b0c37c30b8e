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

The public names are declared in ``__init__.pyi``, and loaded on first use
(``lazy_loader``, PEP 562), so that ``import harness.cli`` (and ``--help``) stays fast.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
# Reachable here too, but runfolder's class: listed in runfolder's __all__, not this one.
__all__.remove("RunFolderError")
