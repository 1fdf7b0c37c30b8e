"""``numericjev import-predictions``: external numerical predictions as one more decoder
(the paper's continuous heads), appended to ``outputs.jsonl``. A prediction without an
order applies to every order of its case and condition (it has no options to permute).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import orjson

from harness.commands.common import READING, RUN_HELP, exit_codes
from harness.errors import ConfigError

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``import-predictions`` parser."""
    parser = sub.add_parser(
        "import-predictions",
        help="add external numerical predictions to a run folder as a named decoder",
        description=(
            "Append predictions from a JSONL file to RUN/outputs.jsonl as decoder NAME. Each line: "
            '{"case": "f17/x0.01", "condition": "arithmetic", "value": 0.36} with optional '
            '"order" and "repeat". Every (case, condition) of the run must be covered once.'
        ),
        epilog=exit_codes(*READING),
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help=RUN_HELP)
    parser.add_argument("predictions", type=Path, metavar="FILE", help="JSONL of predictions")
    parser.add_argument(
        "--name", required=True, help="decoder name for these predictions, e.g. spline4b"
    )
    parser.add_argument(
        "--allow-partial", action="store_true", help="accept predictions for only some cases"
    )
    parser.add_argument(
        "--simulated",
        action="store_true",
        help="the predictions were made by the sim: they are marked SIMULATED (by default an "
        "imported head is the file's, not the run's model's, even in a sim run)",
    )
    parser.set_defaults(func=run)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"{path} is not a file; pass a JSONL file of predictions")
    rows = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{path}: line {number} is not JSON ({exc})") from exc
        if not isinstance(row, dict) or not {"case", "condition", "value"} <= row.keys():
            raise ConfigError(f'{path}: line {number} needs "case", "condition" and "value"')
        try:
            value = Decimal(str(row["value"]))
        except InvalidOperation as exc:
            raise ConfigError(
                f"{path}: line {number}: value {row['value']!r} is not a number"
            ) from exc
        if not value.is_finite():
            raise ConfigError(f"{path}: line {number}: value {row['value']!r} is not finite")
        row["value"] = value
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path} holds no predictions")
    return rows


def _imported(outputs: Path, name: str) -> dict[str, int]:
    """How many of ``outputs``' lines each file (by SHA-256) imported as decoder ``name``."""
    from runfolder import JsonlReader

    mark = b'"decoder":' + orjson.dumps(name)
    counts: dict[str, int] = {}
    for record in JsonlReader[dict[str, Any]](outputs, keep=lambda line: mark in line):
        imported = record.get("imported")
        if record.get("decoder") == name and isinstance(imported, dict):
            digest = str(imported.get("sha256"))
            counts[digest] = counts.get(digest, 0) + 1
    return counts


def run(args: argparse.Namespace) -> int:
    """Validate every prediction against the run's jobs, then append them in one go."""
    from harness.running.folder import suite_of
    from harness.running.jobs import output_identity
    from runfolder import (
        OUTPUTS,
        JsonlAppender,
        OutputLine,
        RunLock,
        is_comparison,
        load_manifest,
        resolve_run,
        scan_logs,
    )

    folder = resolve_run(args.run_folder)
    if is_comparison(folder):
        raise ConfigError(
            f"{folder} is a comparison folder; import into one of its runs, e.g. "
            f"{folder}/<suite>-m1-<model>"
        )
    manifest = load_manifest(folder)
    name = args.name
    if not _NAME.match(name):
        raise ConfigError(
            f"--name {name!r}: use lowercase letters, digits, '_', '-', '.' (start with a letter)"
        )
    if name in manifest.decoders:
        raise ConfigError(f"--name {name!r} is one of the run's own decoders; choose another name")
    suite = suite_of(manifest)
    rows = _read(args.predictions)
    specs = {spec.id: spec for spec in suite.jobs()}
    cases = {case.id for case in suite.cases}
    chosen: dict[str, dict[str, Any]] = {}
    for row in rows:
        case, condition = str(row["case"]), str(row["condition"])
        if case not in cases:
            raise ConfigError(
                f"case {case!r} is not in suite {suite.name} (cases look like {suite.cases[0].id!r})"
            )
        if condition not in suite.conditions:
            raise ConfigError(
                f"condition {condition!r} is not one of {', '.join(suite.conditions)}"
            )
        orders = [str(row["order"])] if "order" in row else list(suite.orders)
        repeats = [int(row["repeat"])] if "repeat" in row else list(range(suite.repeats))
        for order in orders:
            for repeat in repeats:
                job = f"{suite.name}/{case}/{condition}/{order}/r{repeat}"
                if job not in specs:
                    raise ConfigError(
                        f"no job {job} in this run (order {order!r}, repeat {repeat})"
                    )
                if job in chosen:
                    raise ConfigError(
                        f"two predictions for {job}; give each case and condition once"
                    )
                chosen[job] = row
    missing = len(specs) - len(chosen)
    if missing and not args.allow_partial:
        raise ConfigError(
            f"{missing} of {len(specs)} jobs have no prediction; pass --allow-partial to accept that"
        )
    digest = hashlib.sha256(args.predictions.read_bytes()).hexdigest()
    simulated = bool(args.simulated)  # the file's head, not the run's model
    with RunLock(folder):
        # Continue the run's record numbers (a cut log, a line of another run: refused).
        seq = scan_logs(folder, manifest.run_id).last_seq
        earlier = _imported(folder / OUTPUTS, name)
        if earlier.get(digest, 0) >= len(chosen):
            print(f"{args.predictions} is already imported as decoder {name!r}: nothing appended")
            return 0
        if earlier:  # another file under this name: its lines stay, the new ones win
            print(
                f"decoder {name!r} was imported before from another file: these predictions "
                "replace its values (the earlier lines stay in the log; the last line wins)"
            )
        log = JsonlAppender(folder / OUTPUTS)
        try:
            for job_id, row in chosen.items():
                value: Decimal = row["value"]
                line: OutputLine = {
                    **output_identity(specs[job_id], name),
                    "value": format(value, "f"),
                    "cell": None,
                    "rounds": None,
                    "trace": [],
                    "status": "ok",
                    "simulated": simulated,
                    "run": manifest.run_id,
                    "imported": {"file": args.predictions.name, "sha256": digest},
                    "seq": seq + 1,
                }
                log.write(line)
                seq += 1  # spent only once written: no hole
        finally:
            log.close()
    print(
        f"imported {len(chosen):,} predictions as decoder {name!r} into {folder}/{OUTPUTS}",
        file=sys.stdout,
    )
    return 0
