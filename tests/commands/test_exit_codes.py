"""Exit statuses, documented in every --help and docs/comparing.md: 0 done, 1 stopped by a cap or
unfinished, 2 bad input or refused, 130 interrupted."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import analysis.arguments
import analysis.cli
import simstudy.cli
from harness.cli import SIMSTUDY_COMMANDS, build_parser
from tests.runhelpers import cli

ROOT = Path(__file__).resolve().parents[2]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_documents_its_exit_statuses() -> None:
    harness_commands = _subparsers(build_parser())
    analysis_commands = _subparsers(analysis.arguments.build_parser())
    for name, parser in harness_commands.items():
        if name in analysis_commands:
            parser = analysis_commands[name]  # delegated whole to analysis.cli
        if name in SIMSTUDY_COMMANDS:
            parser = simstudy.cli.parser(name)  # delegated whole to simstudy.cli
        text = " ".join(parser.format_help().split())
        assert "exit status: 0 " in text, name
        assert "2 bad input" in text, name
    for name in ("run", "resume", "compare"):
        text = " ".join(harness_commands[name].format_help().split())
        assert "1 stopped by a cap" in text and "130 interrupted" in text, name
    page = (ROOT / "docs" / "comparing.md").read_text()
    assert "## Exit status" in page and "130" in page


def test_run_exits_0_when_done_1_when_capped_2_on_bad_input(tmp_path: Path) -> None:
    suite = ["--suite", "exploratory", "--no-progress"]
    assert cli("run", *suite, "--run", str(tmp_path / "done")) == 0
    assert cli("run", *suite, "--run", str(tmp_path / "cap"), "--max-requests", "5") == 1
    assert cli("resume", str(tmp_path / "cap"), "--no-progress") == 0
    assert cli("run", *suite, "--run", str(tmp_path / "bad"), "--concurrency", "0") == 2
    assert cli("resume", str(tmp_path / "nothing")) == 2
    assert not (tmp_path / "bad").exists()


def _interrupt(args: list[str], wait_for: Path, cwd: Path) -> tuple[int, str, str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    deadline = time.monotonic() + 60

    def sending() -> bool:  # it has recorded an exchange: it is sending, its handlers are in
        return wait_for.exists() and wait_for.stat().st_size > 0

    while child.poll() is None and not sending() and time.monotonic() < deadline:
        time.sleep(0.01)  # noqa: TID251 - polling a child process
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    return child.returncode, out.decode(), err.decode()


def test_ctrl_c_exits_130_and_names_the_folder_to_resume(tmp_path: Path) -> None:
    # --rps keeps the run going long enough to be interrupted.
    folder = tmp_path / "slow"
    args = ["run", "--suite", "exploratory", "--rps", "20", "--run", str(folder), "--no-progress"]
    status, out, err = _interrupt(args, folder / "requests.jsonl", tmp_path)
    assert status == 130
    # Printed when the run started, before any progress, and again on the way out.
    assert out.startswith(f"run folder: {folder}")
    assert "interrupted by SIGINT" in err  # after the requests in flight were recorded
    assert err.strip().endswith(f"continue with: numericjev resume {folder}")
    assert cli("resume", str(folder), "--no-progress", "--rps", "1000000") == 0


def test_ctrl_c_of_a_comparison_exits_130(tmp_path: Path) -> None:
    folder = tmp_path / "cmp"
    args = ["compare", "--models", "sim,sim:seed=7", "--suites", "exploratory", "--rps", "20",
            "--out", str(folder), "--no-progress"]  # fmt: skip
    status, out, err = _interrupt(args, folder / "exploratory-m1-sim" / "requests.jsonl", tmp_path)
    assert status == 130
    assert out.startswith(f"comparison folder: {folder}")
    assert f"continue with: numericjev resume {folder}" in err
    assert not (folder / "summary.md").exists()
    assert cli("status", str(folder)) == 0  # its runs, as they were left


def test_analysis_commands_exit_2_on_bad_input_and_130_when_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert analysis.cli.main(["analyze", str(tmp_path / "absent")]) == 2

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(analysis.cli._COMMANDS, "analyze", interrupted)
    assert analysis.cli.main(["analyze", str(tmp_path)]) == 130


@pytest.mark.parametrize("command", ["run", "compare"])
def test_ctrl_c_before_the_folder_exists_says_there_is_nothing_to_resume(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    import harness.comparing.comparison
    import harness.running.refusals

    def interrupted(*_: object) -> None:  # Ctrl-C while the run is checked, before any folder
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.running.refusals, "check_price", interrupted)
    monkeypatch.setattr(harness.comparing.comparison, "probe_cache", interrupted)
    folder = tmp_path / "never"
    args = (
        ["run", "--suite", "exploratory", "--run", str(folder)]
        if command == "run"
        else ["compare", "--models", "sim,sim:seed=7", "--suites", "exploratory",
              "--out", str(folder)]
    )  # fmt: skip
    assert cli(*args, "--no-progress") == 130
    err = capsys.readouterr().err.strip()
    assert err.endswith("nothing was recorded, nothing to resume"), err
    assert "numericjev resume" not in err and not folder.exists()
