"""The options that name a model and how a run treats it, defined once: ``run``, ``probe``
and ``compare`` (less ``--model``) add them, and each turns them into a
``ModelSpec`` and a ``RunSettings`` here."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.backends.base import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT_S, DEFAULT_TOP_LOGPROBS
from harness.wire import WIRES  # imported for --help anyway (the profiles' checks use it)

if TYPE_CHECKING:  # imported when the command runs, so that --help stays fast
    from harness.backends import ModelSpec
    from harness.running.settings import RunSettings


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The run's ``RunSettings`` from the options (``--cache``, ``--compress``); what they
    leave unset takes ``RunSettings``'s default."""
    from harness.running.settings import RunSettings

    settings = RunSettings() if args.cache is None else RunSettings(cache=args.cache)
    return replace(settings, compress=bool(getattr(args, "compress", settings.compress)))


def add_model_options(parser: argparse.ArgumentParser, *, one_model: bool = True) -> None:
    """The model and how to reach it (shared with ``probe`` and, less ``--model``
    (``one_model=False``), ``compare``, where each applies to every model)."""
    if one_model:
        parser.add_argument(
            "--model",
            default="sim",
            help="sim | oracle | gguf:PATH | a served model's name | a profile's NAME from "
            "numericjev.toml (numericjev config lists them) (default: sim); a spec may carry "
            "options: the sim's knobs (sim:seed=7, sim:confusion=0.3,seed=3: docs/models.md, "
            "The sim), jev-latest:base_url=http://..., "
            "gpt-4o-mini:wire=openai-chat,price_per_million=0.15",
        )
    parser.add_argument(
        "--base-url",
        help="the server of the model (compare: of every served model), e.g. http://127.0.0.1:8377",
    )
    parser.add_argument(
        "--wire",
        default="systemone",
        choices=WIRES,
        help="the server's format: systemone (/v1/systemone, default), openai-decisions "
        "(/v1/decisions), openai-chat (/v1/chat/completions, one completion per question)",
    )
    parser.add_argument(
        "--top-logprobs",
        type=int,
        default=DEFAULT_TOP_LOGPROBS,
        help="openai-chat: alternatives asked per completion (default "
        f"{DEFAULT_TOP_LOGPROBS}, OpenAI's maximum)",
    )
    parser.add_argument(
        "--price-per-million",
        type=float,
        help="USD per million input tokens (default: the price table, which prices the hosted "
        "TypeSafe API only: Jev 0.042; any other server is unknown unless it reports cost)",
    )
    parser.add_argument(
        "--price-per-million-output",
        type=float,
        help="USD per million output tokens, with --price-per-million (default 0)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds per HTTP attempt (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=DEFAULT_MAX_ATTEMPTS,
        help="attempts per request, the first included: failed and malformed replies are "
        f"retried (default {DEFAULT_MAX_ATTEMPTS})",
    )


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The model the options name, e.g. ``sim:seed=7``."""
    from harness.backends import parse_model

    return parse_model(args.model, base_spec(args, args.model))


def base_spec(args: argparse.Namespace, name: str = "") -> ModelSpec:
    """The options every model starts from before its spec's own are read (``compare``
    keeps this one and adds each model's: ``CompareOptions.model``); ``name`` is the spec's
    text, which ``parse_model`` replaces with its name."""
    from harness.backends import ModelSpec

    return ModelSpec(
        name=name,
        base_url=args.base_url,
        timeout_s=args.timeout,
        max_attempts=args.max_attempts,
        price_per_million=args.price_per_million,
        price_per_million_output=args.price_per_million_output,
        wire=args.wire,
        top_logprobs=args.top_logprobs,
    )
