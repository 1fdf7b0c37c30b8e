"""``numericjev serve-sim``: the sim (or oracle) model on a loopback HTTP server."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.wire import WIRES

if TYPE_CHECKING:  # the server is imported only when it runs, so --help stays fast
    from harness.serve import ServerConfig

FAULTS_HELP = """\
fault injection (--faults SPEC):
  SPEC is KIND=P[,KIND=P...], P the probability that a request is failed that way:
    429        429 with Retry-After and retry-after-ms (--retry-after seconds)
    500        500 with a FastAPI-style {"detail": {...}} body
    503        503 with an OpenAI-style {"error": {...}} body
    529        529 overloaded
    reset      connection reset (TCP RST) after the request is read
    truncated  200 whose JSON body is cut in half
    malformed  200 whose body is not JSON
    badlabel   200 naming a label outside the question's criteria
    missing    200 lacking one question's answer
    html       502 HTML error page, as from a proxy
    slow       the right answer, but only after --slow-seconds (past the client timeout)
    refusal    200 in which the model declines the first question (not part of mixed)
  mixed=P spreads P evenly over every kind but refusal; entries add up to at most 1.
  Faults apply on every --wire; on openai-chat, badlabel is a reply whose token names
  no option and missing a reply without the logprobs the client asked for.
  e.g. --faults 429=0.03,500=0.01,reset=0.01,badlabel=0.01   or   --faults mixed=0.10

  Faults never turn a right answer into another valid one: they only make an exchange
  fail detectably, so a client that retries gets the same outputs as against a clean
  server. Except refusal, and badlabel on openai-chat: these are the model's answer, which
  numericjev records as a refusal (final: its decoder fails, nothing is retried).

  Which request fails, and how, is a pure function of --fault-seed, the request body and
  how often that body has already failed; a body fails at most --max-faults-per-request
  times in a row, so retries always get through.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``serve-sim`` parser."""
    parser = sub.add_parser(
        "serve-sim",
        help="serve the sim (or oracle) model on loopback HTTP (System One, Decisions, chat)",
        description=(
            "Serve the built-in sim (or oracle) model over HTTP, giving the same answers as\n"
            "the in-process model (answers are simulated), in one wire format (--wire):\n"
            "  systemone         POST /v1/systemone, as TypeSafe's hosted Jev (default)\n"
            "  openai-decisions  POST /v1/decisions, OpenAI's Decisions shape\n"
            "  openai-chat       POST /v1/chat/completions, one question per request,\n"
            "                    answered with top_logprobs over the option tokens\n"
            "Request bodies may be gzip or zstd encoded (the official SDK sends zstd).\n"
            "GET /v1/models lists the model; GET /healthz reports liveness.\n"
            "Point a run at it with --base-url http://127.0.0.1:PORT. Ctrl-C stops it."
        ),
        epilog=FAULTS_HELP
        + "\n\nexit status: 0 stopped (Ctrl-C); 2 bad input (one line on stderr).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; loopback only unless --allow-remote)",
    )
    parser.add_argument(
        "--port", type=int, default=8377, help="TCP port (default 8377; 0 picks a free one)"
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (without --key anyone there may use it)",
    )
    parser.add_argument(
        "--wire",
        choices=WIRES,
        default="systemone",
        help="the wire format to serve (default systemone; see above)",
    )
    parser.add_argument(
        "--key",
        metavar="KEY",
        help="require 'Authorization: Bearer KEY' on /v1 routes (401 otherwise); "
        "default: accept any key or none",
    )
    parser.add_argument(
        "--model",
        default="sim",
        help="sim: the seeded fallible model (default), with its knobs as in run --model "
        "(sim:seed=4,confusion=0.3); oracle: exact labels",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="added delay before every reply, in milliseconds (default 0)",
    )
    parser.add_argument(
        "--faults",
        default="",
        metavar="SPEC",
        help="inject faults; see 'fault injection' below (default: none)",
    )
    parser.add_argument(
        "--fault-seed", type=int, default=0, help="seed of the fault pattern (default 0)"
    )
    parser.add_argument(
        "--slow-seconds",
        type=float,
        default=35.0,
        help="how long a 'slow' fault delays its reply (default 35: past the client's 30 s)",
    )
    parser.add_argument(
        "--retry-after",
        type=float,
        default=0.05,
        help="seconds an injected 429 asks the client to wait (default 0.05)",
    )
    parser.add_argument(
        "--max-faults-per-request",
        type=int,
        default=3,
        help="most faults in a row for one request body before it is answered (default 3)",
    )
    parser.set_defaults(func=run)


def config_from(args: argparse.Namespace) -> ServerConfig:
    """The server configuration the options describe."""
    from harness.backends import parse_model
    from harness.backends.sim import SimParams
    from harness.serve import FaultSpec, ServerConfig

    spec = parse_model(args.model)  # a malformed knob is one line, as in run --model
    if spec.name not in ("sim", "oracle"):
        raise ConfigError(f"--model serves sim[:KNOB=VALUE,...] or oracle; got {args.model!r}")
    if args.max_faults_per_request < 0:
        raise ConfigError("--max-faults-per-request must be 0 or more")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must lie in 0..65535; got {args.port}")
    return ServerConfig(
        host=args.host,
        port=args.port,
        model=spec.name,
        latency_ms=args.latency_ms,
        sim=spec.sim_params or SimParams(),
        faults=FaultSpec.parse(args.faults),
        fault_seed=args.fault_seed,
        slow_s=args.slow_seconds,
        retry_after_s=args.retry_after,
        max_faults_per_body=args.max_faults_per_request,
        allow_remote=args.allow_remote,
        wire=args.wire,
        key=args.key,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    import signal
    from functools import partial

    import anyio

    from harness.serve import serve_forever

    config = config_from(args)
    try:
        anyio.run(partial(serve_forever, config, stop_signals=(signal.SIGTERM,)))
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # e.g. the port is taken
        reason = exc.strerror or exc
        raise ConfigError(f"cannot listen on {config.host}:{config.port}: {reason}") from exc
    print("serve-sim: stopped", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m harness.commands.serve_sim``: usable before the CLI lists the command."""
    from harness.errors import NumericJevError

    parser = argparse.ArgumentParser(prog="numericjev")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["serve-sim", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except NumericJevError as exc:
        print(f"numericjev serve-sim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
