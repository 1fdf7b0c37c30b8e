"""Whole runs through each OpenAI wire format against serve-sim on loopback.

What equality holds (docs/models.md):

- ``--wire openai-decisions`` translates exactly both ways: every output line (value, cell,
  rounds, trace, extra) equals the in-process sim's, for every decoder.
- ``--wire openai-chat`` reads each answer from a completion's ``top_logprobs``. The chosen
  label is always the sim's (serve-sim lists it first), so every decoder that reads only
  the choice gives identical outputs. The probabilities are the sim's renormalised over the
  labels returned, through ``exp(log(p))``: equal within a few ulps (checked here to 1e-12
  relative), and labels beyond the 20 alternatives (a 100-option direct question) are
  missing, not zero. Probability-reading decoders (``treeK_mean``, beams, ``bisectK``) may
  therefore differ in principle; on the runs below their outputs are identical too.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.backends.sim import SimModel
from harness.errors import ConfigError
from harness.serve import ServerConfig, serve_sim_in_thread
from harness.wire import to_chat_request, to_decisions_request
from tests.runhelpers import cli, records

SMALL = ["--param", "per_operator=1", "--no-progress"]  # 4 families: 64 jobs
DECODERS = ["--decoders", "direct,tree2,tree4,tree10,digits,bits,tree10_mean,tree4_beam2,bisect4"]
KEY = "sk-openai-planted-0123456789abcdef"


def outputs_of(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(job, decoder) -> the whole last output line but its run id and record number."""
    return {
        (r["job"], r["decoder"]): {k: v for k, v in r.items() if k not in ("run", "seq")}
        for r in records(folder / "outputs.jsonl")
    }


@functools.cache
def in_process(root: Path) -> Path:
    folder = root / "inproc"
    assert cli("run", *SMALL, *DECODERS, "--run", str(folder)) == 0
    return folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return in_process(tmp_path_factory.mktemp("reference"))


def wire_run(tmp_path: Path, wire: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small run through serve-sim on ``wire``, with a required key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    folder = tmp_path / wire
    with serve_sim_in_thread(ServerConfig(port=0, wire=wire, key=KEY)) as url:
        status = cli(
            "run", *SMALL, *DECODERS, "--model", "sim-x", "--wire", wire, "--base-url", url,
            "--run", str(folder),
        )  # fmt: skip
    assert status == 0
    written = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert KEY.encode() not in written and b"Bearer" not in written
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["model"]["wire"] == manifest["model"]["backend"] == wire
    assert manifest["model"]["price_usd_per_million_input"] is None  # loopback: not priced
    return folder


def test_decisions_run_equals_the_in_process_sim_and_logs_the_body_sent(
    tmp_path: Path,
    reference: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = wire_run(tmp_path, "openai-decisions", monkeypatch)
    assert outputs_of(folder) == outputs_of(reference)
    for line in records(folder / "requests.jsonl"):
        # request: the System One body the decoders asked (replay compares it); sent: the
        # exact Decisions body that went out, right after it.
        assert "questions" in line["request"] and isinstance(line["request"]["questions"], dict)
        assert line["sent"] == to_decisions_request(line["request"])
        assert list(line)[list(line).index("request") + 1] == "sent"
        assert line["cost_usd"] is None
    capsys.readouterr()
    assert cli("analyze", str(folder)) == 0  # analysis shows the wire format
    assert "sim-x (backend openai-decisions, wire openai-decisions)" in capsys.readouterr().out


def test_chat_run_equals_the_in_process_sim_and_records_coverage(
    tmp_path: Path, reference: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = wire_run(tmp_path, "openai-chat", monkeypatch)
    assert outputs_of(folder) == outputs_of(reference)
    sim = SimModel()
    truncated = 0
    for line in records(folder / "requests.jsonl"):
        body = line["request"]
        assert line["sent"] == {qid: to_chat_request(body, qid).body for qid in body["questions"]}
        expected = sim.respond(body)["answers"]
        for qid, answer in line["response"]["answers"].items():
            options = list(body["questions"][qid]["criteria"])
            returned = [label for label in options if label not in answer["missing"]]
            assert answer["alternatives"] == min(len(options), 20)
            assert len(returned) == min(len(options), 20)  # the >20-options rule
            truncated += len(options) > 20
            given = expected[qid]["probabilities"]
            mass = sum(given[label] for label in returned)
            assert answer["choice"] == expected[qid]["choice"]
            assert answer["coverage"] == pytest.approx(mass / sum(given.values()), rel=1e-12)
            for label in returned:
                assert answer["probabilities"][label] == pytest.approx(
                    given[label] / mass, rel=1e-12, abs=1e-300
                )
    assert truncated  # the direct decoder's 100 options: 80 of them missing each time


@pytest.mark.parametrize("suite", ["exploratory", "historical"])
def test_chat_runs_of_the_other_suites_equal_the_in_process_sim(tmp_path: Path, suite: str) -> None:
    """Thresholds (noul probabilities, threshold_cdf), sets, digits of x, recall: all equal."""
    base = ("--suite", suite, "--no-progress")
    assert cli("run", *base, "--run", str(tmp_path / "inproc")) == 0
    with serve_sim_in_thread(ServerConfig(port=0, wire="openai-chat")) as url:
        run = ("run", *base, "--model", "sim-x", "--wire", "openai-chat", "--base-url", url)
        assert cli(*run, "--run", str(tmp_path / "chat")) == 0
    assert outputs_of(tmp_path / "chat") == outputs_of(tmp_path / "inproc")


def test_a_loopback_server_is_not_priced_and_a_cap_needs_a_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_sim_in_thread(ServerConfig(port=0)) as url:
        run = ("run", *SMALL, "--decoders", "tree10", "--model", "jev-latest", "--base-url", url)
        capped = tmp_path / "capped"
        assert cli(*run, "--run", str(capped), "--max-cost-usd", "1") == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and "--price-per-million" in err[0] and url in err[0]
        assert not capped.exists()
        free = tmp_path / "free"
        assert cli(*run, "--run", str(free)) == 0
        assert "cost unknown" in capsys.readouterr().out
        assert all(line["cost_usd"] is None for line in records(free / "requests.jsonl"))
        # resume keeps the rule: a cap needs a price, which resume takes too
        assert cli("resume", str(free), "--no-progress", "--max-cost-usd", "1") == 2
        assert "--price-per-million" in capsys.readouterr().err
        resumed = ("--max-cost-usd", "1", "--price-per-million", "0.042")
        assert cli("resume", str(free), "--no-progress", *resumed) == 0
        priced = tmp_path / "priced"
        price = ("--price-per-million", "0.042", "--max-cost-usd", "1")
        assert cli(*run, "--run", str(priced), *price) == 0
    costs = [line["cost_usd"] for line in records(priced / "requests.jsonl")]
    tokens = [line["usage"]["input_tokens"] for line in records(priced / "requests.jsonl")]
    assert costs == pytest.approx([n * 0.042 / 1e6 for n in tokens])


@pytest.mark.parametrize("wire", ["openai-decisions", "openai-chat"])
def test_openai_without_a_key_is_refused_before_a_run_folder(
    tmp_path: Path, wire: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    folder = tmp_path / "run"
    assert cli("run", *SMALL, "--model", "gpt-4o-mini", "--wire", wire, "--run", str(folder)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "OPENAI_API_KEY" in err[0] and "api.openai.com" in err[0]
    assert not folder.exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--model", "sim", "--wire", "openai-chat"), "runs in process"),
        (("--model", "gguf:x.gguf", "--base-url", "http://127.0.0.1:1"), "local file"),
        (("--model", "gguf:/nonexistent/model.gguf"), "no such file"),
        (("--model", "m", "--wire", "openai-chat", "--top-logprobs", "0"), "--top-logprobs"),
    ],
)
def test_model_options_that_cannot_work_are_one_line(
    tmp_path: Path, args: tuple[str, ...], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    assert cli("run", *SMALL, *args, "--run", str(folder)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and says in err[0]
    assert not folder.exists()


def test_model_specs_carry_the_wire() -> None:
    from harness.backends import ModelSpec, parse_model

    spec = parse_model("gpt-4o-mini:wire=openai-chat,top_logprobs=5,base_url=http://h:8000")
    assert (spec.name, spec.wire, spec.top_logprobs, spec.base_url) == (
        "gpt-4o-mini", "openai-chat", 5, "http://h:8000",
    )  # fmt: skip
    local = parse_model("gguf:models/x.gguf")  # a path holds no KEY=: the name stays whole
    assert local.name == "gguf:models/x.gguf" and local.is_gguf
    with pytest.raises(ConfigError, match="keep one"):
        parse_model("m:wire=openai-decisions", ModelSpec(name="m", wire="openai-chat"))
    with pytest.raises(ConfigError, match="runs in process"):
        parse_model("gguf:x.gguf:wire=openai-chat")
