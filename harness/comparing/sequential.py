"""``compare --sequential``: ask a comparison's families in looks, stop once every cell has
(docs/comparing.md, "The sequential rule", gives the rule and the plan in ``compare.json``).

After each look ``analysis.statistics`` (``comparison.sequential_look``, on the run folders)
says whether every cell has stopped; a resume replays the looks taken (nothing is sent).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.comparing.comparison import ComparisonResult, run_comparison_async
from harness.errors import ConfigError
from harness.running.session import in_own_loop
from runfolder import load_comparison, look_sizes


def _settled(folder: Path, look: int) -> bool:
    """Whether every cell of the sequential comparison in ``folder`` stopped at ``look``."""
    from analysis.loading.comparison import load_comparison_runs
    from analysis.statistics.comparison import sequential_look
    from analysis.statistics.metrics import SCORED

    # A proper score (crps, logscore) is read from the runs' answers: load them only then.
    metric = (load_comparison(folder)["options"].get("summary") or {}).get("metric", "mape")
    runs = load_comparison_runs(folder, probabilities=metric in SCORED)
    return sequential_look(runs, look).settled


def _families(plan: Mapping[str, Any], look: int) -> dict[str, frozenset[int]]:
    """Each suite's families asked by ``look`` (1-based)."""
    asked = {}
    for suite, order in plan["order"].items():
        size = look_sizes(len(order), int(plan["looks"]))[min(look, plan["looks"]) - 1]
        asked[suite] = frozenset(int(f) for f in order[:size])
    return asked


async def run_sequential_async(
    folder: Path,
    *,
    max_requests: int | None = None,
    **kwargs: Any,
) -> tuple[ComparisonResult, bool]:
    """Run (or continue) the sequential comparison in ``folder`` look by look until the
    rule says every cell has stopped or the last look is asked; the other arguments are
    ``run_comparison_async``'s (``max_requests`` counts over the looks). The last look's
    result, and whether every cell had stopped (False: a cap, an interrupt or an error)."""
    plan = load_comparison(folder)["options"].get("sequential")
    if not plan:
        raise ConfigError(f"{folder} is not a sequential comparison")
    n_looks = len(look_sizes(len(next(iter(plan["order"].values()))), int(plan["looks"])))
    sent = 0
    result: ComparisonResult | None = None
    for look in range(1, n_looks + 1):
        cap = None if max_requests is None else max_requests - sent
        result = await run_comparison_async(
            folder, families=_families(plan, look), max_requests=cap, **kwargs
        )
        sent += sum(run.sent for run in result.cells if run is not None)
        if not result.complete or result.interrupted is not None:
            return result, False
        if _settled(folder, look):
            return result, True
    assert result is not None  # at least one look: a suite has MIN_LOOK families or more
    return result, True


run_sequential = in_own_loop(run_sequential_async)
