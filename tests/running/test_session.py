"""The front door: sync and async sessions, manifest -> model and limits, suites as plugins."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson
import pytest

import harness
from harness import (
    ConfigError,
    Grid,
    Limits,
    ModelSpec,
    Reply,
    RetrySettings,
    RunFolderError,
    Suite,
    TransientError,
    load_suite,
    register_suite,
    resume,
    run,
    run_async,
    suite_names,
)
from harness.backends.sim import SimModel
from harness.protocol.cases import expression_case
from harness.running.replay import read_logs
from harness.running.session import limits_of, model_spec_of
from runfolder import Manifest, load_manifest
from tests.runhelpers import SMALL, cli, final_outputs, records

SMALL_PARAMS = {"per_operator": "2"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same small run through the command line."""
    folder = tmp_path_factory.mktemp("reference") / "run"
    assert cli("run", *SMALL, "--run", str(folder), "--no-progress") == 0
    return folder


async def test_a_suite_runs_inside_a_running_event_loop(tmp_path: Path, reference: Path) -> None:
    suite = load_suite("affine", params=SMALL_PARAMS)
    result = await run_async(suite, ModelSpec("sim"), folder=tmp_path / "async")
    assert result.complete and result.simulated and result.stopped is None
    assert final_outputs(tmp_path / "async") == final_outputs(reference)
    assert result.counters.requests == len(records(reference / "requests.jsonl"))


def test_resume_keeps_the_runs_max_attempts_and_limits(tmp_path: Path, reference: Path) -> None:
    folder = tmp_path / "run"
    suite = load_suite("affine", params=SMALL_PARAMS)
    spec = ModelSpec("sim", max_attempts=2)
    first = run(suite, spec, Limits(concurrency=3, max_requests=10), folder=folder)
    assert first.stopped and "request cap" in first.stopped and not first.complete
    manifest = load_manifest(folder)
    assert manifest.model.retries is not None and manifest.model.retries["max_attempts"] == 2
    spec, retry = model_spec_of(manifest)
    assert spec.max_attempts == retry.max_attempts == 2
    limits = limits_of(manifest)
    assert (limits.concurrency, limits.max_requests) == (3, None)  # the cap is per invocation
    assert limits_of(manifest, concurrency=7, max_requests=1).concurrency == 7
    done = resume(folder)
    assert done.complete and final_outputs(folder) == final_outputs(reference)


def test_a_manifest_from_before_model_retries_keeps_its_max_attempts() -> None:
    # System One runs used to record the retry policy as model.params.retries.
    manifest = Manifest.from_dict(_old_manifest(), Path("old"))
    spec, retry = model_spec_of(manifest)
    assert (spec.name, spec.max_attempts, spec.timeout_s) == ("jev-latest", 9, 12.0)
    assert retry == RetrySettings(max_attempts=9)
    broken = _old_manifest()
    broken["model"]["params"]["retries"]["max_attempts"] = "many"
    with pytest.raises(RunFolderError, match=r"model\.retries\.max_attempts"):
        model_spec_of(Manifest.from_dict(broken, Path("old")))


def _old_manifest() -> dict[str, Any]:
    return {
        "format_version": 1,
        "run_id": "old",
        "created_utc": "2026-11-01T00:00:00+00:00",
        "suite": "affine",
        "suite_params": {},
        "seed": 1,
        "case_hash": "0" * 64,
        "source_hash": "0" * 64,
        "n_cases": 1,
        "decoders": ["tree10"],
        "conditions": ["arithmetic"],
        "orders": ["ascending"],
        "repeats": 1,
        "n_jobs": 1,
        "model": {
            "name": "jev-latest",
            "backend": "systemone",
            "simulated": False,
            "base_url": "http://127.0.0.1:9",
            "params": {"timeout_s": 12.0, "retries": {"max_attempts": 9}},
            "price_usd_per_million_input": None,
        },
        "limits": {"concurrency": 4, "rps": None, "max_requests": None, "max_cost_usd": None},
        "versions": {"harness": "0.1.0"},
    }


def _tiny(seed: int = 1, decoders: tuple[str, ...] = ("tree4", "direct")) -> Suite:
    grid = Grid(Decimal(0), Decimal(1), 16)
    cases = (
        expression_case(0, "int", "3 + 4", Fraction(7), grid),
        expression_case(1, "int", "2 * 6", Fraction(12), grid),
    )
    return Suite("tiny_plugin", seed, cases, decoders)


def test_a_suite_registered_in_code_runs_and_resumes(tmp_path: Path) -> None:
    register_suite("tiny_plugin", _tiny, replace=True)
    assert "tiny_plugin" in suite_names() and "affine" in suite_names()
    folder = tmp_path / "tiny"
    result = run(load_suite("tiny_plugin"), ModelSpec("oracle"), folder=folder)
    assert result.complete and result.counters.jobs_total == 2 * 2 * 2
    values = {r["value"] for r in records(folder / "outputs.jsonl")}
    assert values == {"7", "12"}  # the oracle recovers both targets with both decoders
    before = (folder / "requests.jsonl").read_bytes()
    assert resume(folder).complete  # found again by name, through the registry
    assert (folder / "requests.jsonl").read_bytes() == before
    with pytest.raises(ConfigError, match="already exists"):
        register_suite("tiny_plugin", _tiny)
    with pytest.raises(ConfigError, match="already exists"):
        register_suite("affine", _tiny)  # an entry point's name is taken too
    register_suite("misnamed_plugin", _tiny, replace=True)
    with pytest.raises(ConfigError, match="must agree"):
        load_suite("misnamed_plugin")


def test_unknown_suites_list_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown suite 'nope'; known suites: .*affine"):
        load_suite("nope")


class OnceBusy:
    """The sim, but every body's first attempt fails with a 503 and its second is billed twice:
    once as a malformed 200 (a label outside the criteria), once answered."""

    name, simulated, price_per_million = "sim-flaky", True, None

    def __init__(self) -> None:
        self.sim = SimModel()
        self.seen: dict[bytes, int] = {}

    async def answer(self, body: Mapping[str, Any]) -> Reply:
        key = orjson.dumps(body)
        self.seen[key] = count = self.seen.get(key, 0) + 1
        if count == 1:
            raise TransientError("overloaded", "busy", status=503)
        response = self.sim.respond(body)
        if count == 2:
            response["answers"]["q1"]["choice"] = "not-a-label"
        return Reply(response, model="sim", usage=response["usage"], cost_usd=0.001)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": "flaky", "simulated": True, "params": {}}

    async def aclose(self) -> None:
        pass


def test_any_backend_object_runs_and_every_attempt_is_logged_and_counted(
    tmp_path: Path, reference: Path
) -> None:
    folder = tmp_path / "flaky"
    suite = load_suite("affine", params=SMALL_PARAMS)
    at_once = RetrySettings(initial_wait_s=0.0, max_wait_s=0.0)  # no backoff in a test
    result = run(suite, OnceBusy(), Limits(concurrency=8), folder=folder, retry=at_once)
    assert result.complete
    assert final_outputs(folder) == final_outputs(reference)
    lines = records(folder / "requests.jsonl")
    kinds = [(line["attempt"], (line["error"] or {}).get("kind")) for line in lines]
    assert set(kinds) == {(1, "overloaded"), (2, "malformed"), (3, None)}
    assert result.counters.errors == 2 * result.counters.requests
    # The malformed 200 was billed: its cost is on its line and in the totals, and a
    # resume (or status) that reads the log back agrees with the live count.
    billed = sum(line["cost_usd"] or 0.0 for line in lines)
    assert billed == pytest.approx(0.002 * result.counters.requests)
    assert result.counters.cost_usd == pytest.approx(billed)
    manifest = load_manifest(folder)
    assert read_logs(folder, manifest.decoders, manifest.run_id).counters.cost_usd == (
        pytest.approx(billed)
    )


def test_anyio_run_is_called_only_by_the_sync_entry_points() -> None:
    root = Path(harness.__file__).parent
    callers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "anyio"
            ):
                callers.add(path.relative_to(root).as_posix())
    # serve-sim's server owns its own event loop; every run goes through the session, whose
    # in_own_loop makes every sync form (a run's here, a shard's, a comparison's); a
    # comparison checks its models' backends before it writes anything.
    assert callers == {"running/session.py", "comparing/comparison.py", "commands/serve_sim.py"}


def test_each_sync_entry_point_is_its_async_one_in_its_own_loop() -> None:
    from harness.comparing.comparison import run_comparison, run_comparison_async

    pairs: list[tuple[object, object]] = [(run_comparison, run_comparison_async)]
    for blocking, coroutine in pairs:
        # One signature, written once: the two forms cannot drift apart.
        assert getattr(blocking, "__wrapped__", None) is coroutine
        name = getattr(coroutine, "__name__", "")
        assert getattr(blocking, "__name__", None) == name.removesuffix("_async")
        assert getattr(blocking, "__doc__", None) == f"``{name}`` in its own event loop."


def test_a_session_puts_back_the_signal_handlers_it_found(tmp_path: Path) -> None:
    import signal
    from types import FrameType

    from harness.running.interrupts import Interrupts

    def mine(signum: int, frame: FrameType | None) -> None:
        """The command line's: a SIGTERM after the session still ends in one line."""

    before = signal.signal(signal.SIGTERM, mine)
    try:
        result = run(load_suite("exploratory"), folder=tmp_path / "run", interrupts=Interrupts())
        assert result.complete and signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)
    with pytest.raises(ConfigError, match="--drain-seconds must be >= 0; got nan"):
        Interrupts(float("nan"))
