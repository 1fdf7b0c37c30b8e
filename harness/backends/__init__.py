"""Model backends behind one async ``answer(body)``: ONE attempt, failures classified.

In process, no network: ``sim``, ``oracle``, and ``gguf:PATH`` (a local GGUF file read
through llama-cpp-python, an optional extra). Any other model name is sent over HTTP to
``--base-url`` in the wire format ``--wire`` names (never guessed from the URL):

- ``systemone`` (default): any ``/v1/systemone`` server; default server
  ``TYPESAFE_BASE_URL``, else the hosted API; key ``TYPESAFE_API_KEY``.
- ``openai-decisions``: OpenAI's Decisions API (``/v1/decisions``);
- ``openai-chat``: any chat-completions server, one single-token completion per question.
  Both OpenAI wires take ``OPENAI_BASE_URL`` (else OpenAI's API) and ``OPENAI_API_KEY``.

Every HTTP backend shares the HTTP layer (``harness.backends.http``) and only translates
bodies. Each backend is imported on first use. Retries, pacing and validation are the
caller's (``harness.calling``).

May import ``harness.wire``, ``harness.protocol`` and errors; never the caller, the
scheduler or the run folder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

from harness.backends.base import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOP_LOGPROBS,
    Backend,
    Reply,
    ServerOptions,
    Transport,
)
from harness.errors import ConfigError
from harness.wire import WIRES

if TYPE_CHECKING:
    from harness.backends.sim.params import SimParams

__all__ = [
    "Backend",
    "ModelSpec",
    "Reply",
    "ServerOptions",
    "Transport",
    "make_backend",
    "parse_model",
    "parse_options",
    "server_of",
    "split_models",
]

IN_PROCESS = ("sim", "oracle")
GGUF_PREFIX = "gguf:"  # --model gguf:PATH reads a local GGUF file in process


@dataclass(frozen=True)
class ModelSpec:
    """What the user asked for: a model name and how to reach it (never a key)."""

    name: str = "sim"
    base_url: str | None = None
    sim: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS  # per request, the first included (retry policy)
    price_per_million: float | None = None
    wire: str = "systemone"  # the HTTP wire format (--wire)
    top_logprobs: int = DEFAULT_TOP_LOGPROBS  # openai-chat: alternatives per completion
    # The NAME of the environment variable that holds the key (None: the wire's own,
    # TYPESAFE_API_KEY or OPENAI_API_KEY); never the key itself.
    key_env: str | None = None
    price_per_million_output: float | None = None  # USD per million output tokens

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"--max-attempts must be at least 1; got {self.max_attempts}")
        Transport(timeout_s=self.timeout_s)  # the timeout's rule, said once there
        if self.wire not in WIRES:
            raise ConfigError(f"--wire takes {', '.join(WIRES)}; got {self.wire!r}")
        if self.top_logprobs < 1:
            raise ConfigError(f"--top-logprobs must be at least 1; got {self.top_logprobs}")
        local = self.name in IN_PROCESS or self.is_gguf
        if local and self.wire != "systemone":
            raise ConfigError(
                f"--wire applies to models served over HTTP; {self.name!r} runs in process "
                "(drop --wire, or name a served model with --base-url)"
            )
        if self.is_gguf and self.base_url:
            raise ConfigError("--base-url does not apply to a gguf: model (a local file)")
        if self.key_env is not None and not _ENV_NAME.match(self.key_env):
            raise ConfigError(
                f"key_env names an environment variable (e.g. OPENAI_API_KEY), not a key; "
                f"got a value of {len(self.key_env)} characters"
            )
        for what, price in (
            ("price_per_million", self.price_per_million),
            ("price_per_million_output", self.price_per_million_output),
        ):
            if price is not None and not (math.isfinite(price) and price >= 0):
                raise ConfigError(f"{what} must be a number >= 0 (USD); got {price}")
        self.sim_params  # noqa: B018 (a malformed knob is refused when the spec is made)

    @cached_property
    def sim_params(self) -> SimParams | None:
        """The sim's knobs read once into its parameters (None: not the sim); a knob
        elsewhere, unknown, not a number or out of range is one line."""
        if self.name != "sim":
            if self.sim:
                raise ConfigError("sim knobs (sim:KNOB=VALUE) apply only to the model sim")
            return None
        from harness.backends.sim.params import SimParams

        return SimParams.parse(self.sim)

    def transport(self, concurrency: int = DEFAULT_CONCURRENCY) -> Transport:
        """How this model's server is reached by a run of ``concurrency`` requests in flight
        (the pool follows the run's ``Limits``; the timeout is the model's)."""
        return Transport(concurrency, self.timeout_s)

    @property
    def is_gguf(self) -> bool:
        """Whether the model is a local GGUF file (``gguf:PATH``)."""
        return self.name.startswith(GGUF_PREFIX)


# ``NAME:KEY=VALUE[,KEY=VALUE...]``. A name may itself hold colons (OpenRouter's
# ``openai/gpt-4o:free``): options start at the first colon followed by ``key=``.
_OPTIONS = re.compile(r":(?=[A-Za-z_]\w*=)")
_OPTION = re.compile(r"^[A-Za-z_]\w*=")
# What a spec may set beyond the sim's knobs, per kind of model: make_backend reads each
# from the spec (``gpt-4o-mini:wire=openai-chat,base_url=http://127.0.0.1:8000``).
_HTTP_OPTIONS = (
    "base_url",
    "wire",
    "top_logprobs",
    "key_env",
    "price_per_million",
    "price_per_million_output",
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_model(text: str, base: ModelSpec | None = None) -> ModelSpec:
    """A model spec from text: ``sim``, ``sim:seed=7``, ``oracle``, ``gguf:models/x.gguf`` (a
    path holds no ``key=``), ``gpt-4o-mini:wire=openai-chat,base_url=http://127.0.0.1:8000``.

    The options are the sim's knobs, or a served model's base_url, wire, top_logprobs, key_env
    and prices (others refused, naming those); ``base`` gives every other setting, and an
    option that contradicts it is refused."""
    base = base or ModelSpec()
    text = text.strip()
    found = _OPTIONS.search(text)
    name, rest = (text[: found.start()], text[found.end() :]) if found else (text, "")
    if not name:
        raise ConfigError(f"model spec {text!r} has no model name before ':'")
    if name.partition(":")[0] in ("sim", "oracle") and ":" in name:
        raise ConfigError(f"model spec {text!r} has ':' but no KEY=VALUE after it, e.g. sim:seed=7")
    items = [part.strip() for part in rest.split(",")] if found else []
    options = parse_options(filter(None, items), f"model spec {text!r}")
    if name == "sim":
        return replace(base, name=name, sim=options)
    allowed = () if name == "oracle" else _HTTP_OPTIONS
    unknown = [key for key in options if key not in allowed]
    if unknown:
        what = ", ".join(allowed) or "none (it answers with exact labels)"
        raise ConfigError(
            f"model spec {text!r}: {name} takes no option {unknown[0]!r}; its options: {what}"
            + ("; sim knobs go with sim, e.g. sim:seed=7" if name != "oracle" else "")
        )
    url = options.get("base_url")
    if url is not None and base.base_url not in (None, url):
        raise ConfigError(f"model spec {text!r} sets base_url, and so does --base-url: keep one")
    wire = options.get("wire", base.wire)
    if "wire" in options and base.wire not in ("systemone", wire):
        raise ConfigError(f"model spec {text!r} sets wire, and so does --wire: keep one")
    top = options.get("top_logprobs")
    if top is not None and not top.isdigit():
        raise ConfigError(f"model spec {text!r}: top_logprobs must be a whole number; got {top!r}")
    prices: dict[str, float] = {}
    for key in ("price_per_million", "price_per_million_output"):
        if key in options:
            price = _number(options[key], f"model spec {text!r}: {key}")
            if getattr(base, key) not in (None, price):
                option = "--" + key.replace("_", "-")
                raise ConfigError(f"model spec {text!r} sets {key}, and so does {option}: keep one")
            prices[key] = price
    return replace(
        base,
        name=name,
        base_url=url or base.base_url,
        wire=wire,
        top_logprobs=base.top_logprobs if top is None else int(top),
        key_env=options.get("key_env", base.key_env),
        price_per_million=prices.get("price_per_million", base.price_per_million),
        price_per_million_output=prices.get(
            "price_per_million_output", base.price_per_million_output
        ),
    )


def parse_options(items: Iterable[str], what: str) -> dict[str, str]:
    """``KEY=VALUE`` texts into a dict: the ONE reader of every key=value option (a model
    spec's and ``--param``); refuses anything else, and a
    key given twice, in one line naming ``what``."""
    options: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"{what} takes KEY=VALUE; {item!r} is not KEY=VALUE")
        if key in options:
            raise ConfigError(f"{what} sets {key!r} twice")
        options[key] = value
    return options


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{what} must be a number; got {text!r}") from None


def split_models(text: str) -> list[str]:
    """``--models`` text into model specs: commas separate models, except that a part
    that is ``KEY=VALUE`` continues the spec before it (``sim,sim:confusion=0.3,seed=3``
    is two models)."""
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if _OPTION.match(part) and specs and ":" in specs[-1]:
            specs[-1] += "," + part
        elif _OPTION.match(part):
            raise ConfigError(f"--models: {part!r} is an option with no model before it")
        else:
            specs.append(part)
    return specs


def server_of(spec: ModelSpec, environ: Mapping[str, str]) -> tuple[str, str, bool]:
    """The base URL a served ``spec`` would call (checked: ``http.checked_url``), the
    variable its key is read from, and whether that server is a hosted API needing a key."""
    if spec.wire == "systemone":
        from harness.backends.pricing import is_hosted
        from harness.backends.systemone import DEFAULT_BASE_URL, normalise_base_url

        base = normalise_base_url(
            spec.base_url or environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
        )
        return base, spec.key_env or "TYPESAFE_API_KEY", is_hosted(base)
    from harness.backends.remote import OPENAI_KEY_VARIABLE, openai_server

    base, hosted = openai_server(spec.base_url, environ)
    return base, spec.key_env or OPENAI_KEY_VARIABLE, hosted


def make_backend(
    spec: ModelSpec,
    known: Mapping[str, Fraction] | None = None,
    *,
    transport: Transport | None = None,
) -> Backend:
    """Build the backend ``spec`` names; refuses bad settings before anything is sent.

    ``known`` gives the oracle targets that no state reveals (``harness.running.check.oracle_for``);
    ``transport`` is how an HTTP backend reaches its server, handed on unchanged to its sender
    (a run's: ``ModelSpec.transport``; default: the spec's with the default pool).
    """
    if spec.sim_params is not None:
        from harness.backends.sim import SimModel

        # A run hands the sim the same question objects job after job (``Question.wire``).
        return SimModel(spec.sim_params, shared_questions=True)
    if spec.name == "oracle":
        from harness.backends.oracle import Oracle

        return Oracle(known)
    if spec.is_gguf:
        from harness.backends.gguf import GgufBackend

        return GgufBackend(spec.name[len(GGUF_PREFIX) :])
    options: ServerOptions = {
        "transport": transport or spec.transport(),  # the one value the sender gets
        "price_per_million": spec.price_per_million,
        "price_per_million_output": spec.price_per_million_output,
        "key_env": spec.key_env,
    }
    environ = _key_environ(spec)
    if spec.wire == "openai-decisions":
        from harness.backends.decisions import OpenAIDecisionsBackend

        return OpenAIDecisionsBackend(spec.name, base_url=spec.base_url, env=environ, **options)
    if spec.wire == "openai-chat":
        from harness.backends.chat import OpenAIChatBackend

        top = spec.top_logprobs
        return OpenAIChatBackend(
            spec.name, base_url=spec.base_url, top_logprobs=top, env=environ, **options
        )
    from harness.backends.pricing import is_hosted
    from harness.backends.systemone import DEFAULT_BASE_URL, SystemOneBackend

    base = spec.base_url or environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
    # One definition of "the hosted API" for the key check and the price table.
    if is_hosted(base) and not environ.get("TYPESAFE_API_KEY", "").strip():
        # Fail before a run folder exists: every request to the hosted API would be a 401.
        raise ConfigError(
            f"model {spec.name!r} is served by the hosted TypeSafe API, which needs a key: "
            "set TYPESAFE_API_KEY, or pass --base-url for another server, or use --model sim"
        )

    return SystemOneBackend(spec.name, base_url=spec.base_url, env=environ, **options)


def _key_environ(spec: ModelSpec) -> Mapping[str, str]:
    """The environment the backend reads its key from: ``os.environ``, with the wire's key
    variable taken from ``spec.key_env`` when a profile names another; refuses a named
    variable that is not set (every request would be refused)."""
    import os

    if spec.key_env is None:
        return os.environ
    key = os.environ.get(spec.key_env, "").strip()
    if not key:
        raise ConfigError(
            f"model {spec.name!r} reads its key from ${spec.key_env} (key_env), which is not "
            f"set: export {spec.key_env}=..., or drop key_env for a server that needs no key"
        )
    wire_variable = "TYPESAFE_API_KEY" if spec.wire == "systemone" else "OPENAI_API_KEY"
    return {**os.environ, wire_variable: key}
