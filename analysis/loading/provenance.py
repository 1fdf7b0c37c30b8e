"""The manifest's two hashes, recomputed (the paper's analysis rechecks them).

The case hash is recomputed from the run's ``cases.json`` (written with the manifest; runs
made before it have none, and say so). The source hash covers the format, harness and suite
sources that made the requests: it is recomputed from the checkout this analysis runs in,
when that checkout holds them, and a difference then means another revision made the run,
not a damaged run folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runfolder import (
    SOURCE_PACKAGES,
    Manifest,
    RunFolderError,
    case_digest,
    read_cases,
    source_digest,
)

CHECKOUT = Path(__file__).resolve().parents[2]  # the folder holding analysis/, harness/, ...


@dataclass(frozen=True)
class HashCheck:
    """What the recomputed hashes say: ``case`` and ``source`` are match | differs | absent."""

    case: str
    source: str
    case_hash: str | None  # recomputed (None when it could not be)
    source_hash: str | None

    def line(self) -> str:
        """One line for people, for the top of the analysis."""
        case = {
            "match": "the case set in cases.json matches the manifest's case hash",
            "differs": "cases.json does NOT match the manifest's case hash (edited after the run?)",
            "absent": "no cases.json (a run made before it was written): case hash not rechecked",
        }[self.case]
        source = {
            "match": "this checkout's harness source is the run's",
            "differs": "this checkout's harness source differs from the run's (another "
            "revision made it; the tables read its logs as recorded)",
            "absent": "no harness source beside this analysis: source hash not rechecked",
        }[self.source]
        return f"Hashes rechecked: {case}; {source}."


def recheck(run_dir: Path, manifest: Manifest, checkout: Path = CHECKOUT) -> HashCheck:
    """Recompute the case hash from ``cases.json`` and the source hash from ``checkout``."""
    case, case_hash = "absent", None
    try:
        payload = read_cases(run_dir)
    except RunFolderError:
        payload, case = None, "differs"  # not JSON any more: edited or damaged
    if payload is not None:
        case_hash = case_digest(payload)
        case = "match" if case_hash == manifest.case_hash else "differs"
    source, source_hash = "absent", None
    if all((checkout / package).is_dir() for package in SOURCE_PACKAGES):
        source_hash = source_digest(checkout)
        source = "match" if source_hash == manifest.source_hash else "differs"
    return HashCheck(case, source, case_hash, source_hash)
