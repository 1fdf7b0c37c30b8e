"""The sequential rule replayed on a finished comparison (SIMULATED when its runs are).

``python -m benchmarks.bench_sequential DIR [--orders N]`` takes a comparison folder whose
cells ran in full, puts its families in N seeded random orders, and for each order replays
``analysis.statistics.sequential.sequential_replay`` (``--looks`` looks of equal shares, or
looks ``--at`` given shares, alpha spent O'Brien-Fleming-type or Hwang-Shih-DeCani with
``--gamma``, Holm within each look over the cells that can be called, futility below 5%
conditional power): at which look each cell stopped, whether the verdicts agree with the
full comparison's, and the share of the comparison's requests and question bytes (a proxy
for input tokens, so cost) asked by then, counted per job and decoder from both runs' logs
(a job sends one request per round, its decoders' questions together). ``compare
--sequential`` asks every cell of a family while any cell is open; ``per_condition_*`` and
``per_decoder_*`` are what asking a condition's jobs, or each job's decoders, only while
their cells are open would ask. The last line is JSON.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from analysis.loading.comparison import load_comparison_runs
from analysis.loading.logs.outputs import family_sort_key
from analysis.statistics.comparison import compare_runs
from analysis.statistics.sequential import MIN_LOOK, sequential_replay


@dataclass(frozen=True, eq=False)
class JobTable:
    """One run's jobs: family and condition (indices into the comparison's axes), and per
    decoder (J, D) its rounds (``outputs.jsonl``) and the bytes of its questions
    (``requests.jsonl``'s ``qmap``; a proxy for the input tokens, and so the cost). A job
    sends one request per round with its decoders' questions together, so it asks as many
    requests as the deepest decoder it runs, and the questions of every decoder it runs."""

    family: np.ndarray
    condition: np.ndarray
    rounds: np.ndarray
    question_bytes: np.ndarray


def job_table(
    run_dir: Path, families: tuple[str, ...], decoders: tuple[str, ...], conditions: tuple[str, ...]
) -> JobTable:
    """``JobTable`` of the run in ``run_dir``."""
    rounds: dict[str, dict[str, int]] = {}
    where: dict[str, tuple[int, int]] = {}
    with (run_dir / "outputs.jsonl").open("rb") as lines:
        for line in lines:
            row = orjson.loads(line)
            rounds.setdefault(row["job"], {})[row["decoder"]] = int(row.get("rounds") or 0)
            family = str(row["family"])
            at = families.index(family if family in families else f"f{family}")
            where[row["job"]] = (at, conditions.index(row["condition"]))
    sizes: Counter[tuple[str, str]] = Counter()
    with (run_dir / "requests.jsonl").open("rb") as lines:
        for line in lines:
            row = orjson.loads(line)
            questions = (row.get("request") or {}).get("questions") or {}
            for qid, target in (row.get("qmap") or {}).items():
                sizes[row["job"], target.split("/", 1)[0]] += len(orjson.dumps(questions[qid]))
    jobs = sorted(rounds)
    table = np.array([[rounds[j].get(d, 0) for d in decoders] for j in jobs], np.float64)
    qbytes = np.array([[sizes[j, d] for d in decoders] for j in jobs], np.float64)
    fam, cond = (np.array([where[j][i] for j in jobs], np.int64) for i in (0, 1))
    return JobTable(fam, cond, table, qbytes)


def asked(
    runs: list[JobTable],
    rank: np.ndarray,
    sizes: tuple[int, ...],
    stopped_at: np.ndarray,
    by: str = "family",
) -> tuple[float, float]:
    """Requests and question bytes the looks ask: look L asks its new families (``rank``:
    each family's place in the order) while a cell is open after look L-1: every job of the
    family while any cell is (``by="family"``, as ``compare --sequential``), a job while a
    cell of its condition is (``"condition"``), a job's open decoders only (``"decoder"``)."""
    requests = questions = 0.0
    for run in runs:
        n_d = run.rounds.shape[1]
        look = np.searchsorted(np.array(sizes), rank[run.family], side="right") + 1  # 1-based
        open_ = look[:, None] <= stopped_at.reshape(n_d, -1)[:, run.condition].T  # (J, D)
        if by != "decoder":  # a job runs all its decoders while any of the cells is open
            scope = open_.any(axis=1) if by == "condition" else look <= stopped_at.max()
            open_ = np.broadcast_to(scope[:, None], open_.shape)
        requests += float(np.where(open_, run.rounds, 0).max(axis=1).sum())
        questions += float(np.where(open_, run.question_bytes, 0).sum())
    return requests, questions


def main(argv: list[str] | None = None) -> int:
    """Replay the rule over ``--orders`` family orders and print what it saved."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_sequential")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--orders", type=int, default=20)
    parser.add_argument("--looks", type=int, default=4, help="looks (equal shares)")
    parser.add_argument(
        "--at", default=None, help="looks at these shares of the families instead, e.g. 0.6,1"
    )
    parser.add_argument(
        "--gamma", type=float, default=None, help="Hwang-Shih-DeCani spending (default: OBF-type)"
    )
    parser.add_argument("--futility", type=float, default=0.05, help="conditional power floor")
    parser.add_argument("--futility-from", type=float, default=0.25, help="share of families")
    parser.add_argument("--metric", default="mape", help="the verdicts' metric (compare --metric)")
    args = parser.parse_args(argv)
    c = compare_runs(load_comparison_runs(args.folder), args.metric, n_boot=9_999)
    s = c.suites[0]
    # The comparison's own family axis (as ``compare_runs`` builds it).
    families = tuple(
        sorted({f for r in s.runs for f in r.outputs.family_names}, key=family_sort_key)
    )
    design = (tuple(s.design.decoders), tuple(s.design.conditions))
    runs = [job_table(r.manifest.folder, families, *design) for r in s.runs]
    full_requests = sum(float(r.rounds.max(axis=1).sum()) for r in runs)
    full_bytes = sum(float(r.question_bytes.sum()) for r in runs)
    full = np.array([{"worse": 1, "better": -1}.get(v or "", 0) for v in s.verdicts[0].ravel()])
    lower = c.lower_is_better
    rng = np.random.default_rng(20260923)
    f = len(families)
    sizes = None
    if args.at:  # as ``look_sizes`` rounds equal shares: none before MIN_LOOK families
        at = sorted({min(f, max(MIN_LOOK, round(f * float(t)))) for t in args.at.split(",")})
        sizes = tuple(at)
    shares: dict[str, list[tuple[float, float]]] = {"family": [], "condition": [], "decoder": []}
    agree: list[float] = []
    looks: Counter[str] = Counter()
    for _ in range(args.orders):
        order = rng.permutation(len(families))
        diffs = s.family_diffs[0][order].reshape(len(families), -1)
        counts = s.family_counts[0][order].reshape(len(families), -1)
        path = sequential_replay(
            diffs,
            counts,
            n_looks=args.looks,
            gamma=args.gamma,
            seed=int(rng.integers(2**31)),
            futility=args.futility,
            futility_from=args.futility_from,
            sizes=sizes,
        )
        verdict = path.sign * (1 if lower else -1)  # +1 worse, as ``full``
        rank = np.argsort(order)
        for by, share in shares.items():
            requests, questions = asked(runs, rank, path.sizes, path.stopped_at, by)
            share.append((requests / full_requests, questions / full_bytes))
        agree.append(float(np.mean(verdict == full)))
        looks.update(f"{r}@{k}" for r, k in zip(path.reason, path.stopped_at, strict=True))

    def summary(pairs: list[tuple[float, float]], i: int) -> dict[str, float]:
        values = [pair[i] for pair in pairs]
        return {"mean": float(np.mean(values)), "max": float(np.max(values))}

    result = {
        "folder": str(args.folder),
        "families": len(families),
        "requests_full": int(full_requests),
        "share_of_requests": summary(shares["family"], 0),
        "share_of_question_bytes": summary(shares["family"], 1),
        # Were a condition's jobs, or each job's decoders, asked only while their cells are
        # open (not what compare does: see docs/comparing.md).
        "per_condition_share_of_requests": summary(shares["condition"], 0),
        "per_decoder_share_of_requests": summary(shares["decoder"], 0),
        "per_decoder_share_of_question_bytes": summary(shares["decoder"], 1),
        "verdict_agreement": {"mean": float(np.mean(agree)), "min": float(np.min(agree))},
        "stops": dict(sorted(looks.items())),
        "orders": args.orders,
        "looks": list(sizes or ()) or args.looks,
        "gamma": args.gamma,
        "futility": [args.futility, args.futility_from],
        "metric": args.metric,
    }
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
