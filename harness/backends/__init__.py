"""Model backends behind one async ``answer(body)``: ONE attempt, failures classified.

``sim`` and ``oracle`` run in process with no network; any other model name is a System One
model sent over HTTP to ``--base-url`` (default ``TYPESAFE_BASE_URL``, else the hosted API),
through the HTTP layer every HTTP backend shares (``harness.backends.http``). Each is looked
up by name and imported on first use. Retries, pacing and validation are the caller's
(``harness.calling``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from harness.backends.base import Backend, Reply
from harness.errors import ConfigError

__all__ = ["Backend", "ModelSpec", "Reply", "make_backend", "parse_model", "split_models"]


@dataclass(frozen=True)
class ModelSpec:
    """What the user asked for: a model name and how to reach it (never a key)."""

    name: str = "sim"
    base_url: str | None = None
    sim: Mapping[str, str] = field(default_factory=dict)
    concurrency: int = 64
    timeout_s: float = 30.0
    max_attempts: int = 6  # per request, first attempt included (the caller's retry policy)
    price_per_million: float | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max attempts must be at least 1; got {self.max_attempts}")
        if not self.timeout_s > 0:
            raise ConfigError(f"the timeout must be positive; got {self.timeout_s}")

    @property
    def label(self) -> str:
        """The spec as ``parse_model`` reads it back: ``sim``, ``sim:seed=7``,
        ``jev-latest:base_url=http://127.0.0.1:8377``."""
        options = dict(self.sim)
        if self.base_url is not None and self.name not in ("sim", "oracle"):
            options["base_url"] = self.base_url
        return self.name + (
            ":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else ""
        )


# ``NAME:KEY=VALUE[,KEY=VALUE...]``. A name may itself hold colons (OpenRouter's
# ``openai/gpt-4o:free``): options start at the first colon followed by ``key=``.
_OPTIONS = re.compile(r":(?=[A-Za-z_]\w*=)")
_OPTION = re.compile(r"^[A-Za-z_]\w*=")
# What a spec may set beyond the sim's knobs, per kind of model. Room for more (a wire
# format, say) is here: name it, and make_backend reads it from the spec.
_HTTP_OPTIONS = ("base_url",)


def parse_model(text: str, base: ModelSpec | None = None) -> ModelSpec:
    """A model spec from text: ``sim``, ``sim:seed=7``, ``sim:noise_arithmetic=0.05,seed=3``,
    ``oracle``, ``jev-latest``, ``jev-latest:base_url=http://127.0.0.1:8377``.

    Options after the name are the sim's knobs for ``sim`` (``numericjev run --help`` lists
    them) and ``base_url`` for a System One model; anything else is refused with the
    options that exist. ``base`` gives every other setting (timeout, retries, price, and
    the knobs and URL the options add to); an option that contradicts it is refused.
    """
    base = base or ModelSpec()
    text = text.strip()
    found = _OPTIONS.search(text)
    name, rest = (text[: found.start()], text[found.end() :]) if found else (text, "")
    if not name:
        raise ConfigError(f"model spec {text!r} has no model name before ':'")
    if name.partition(":")[0] in ("sim", "oracle") and ":" in name:
        raise ConfigError(f"model spec {text!r} has ':' but no KEY=VALUE after it, e.g. sim:seed=7")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))) if found else ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"model spec {text!r}: {item!r} is not KEY=VALUE")
        if key.strip() in options:
            raise ConfigError(f"model spec {text!r} sets {key.strip()!r} twice")
        options[key.strip()] = value.strip()
    if name == "sim":
        knobs = dict(base.sim)
        for key, value in options.items():
            if knobs.get(key, value) != value:
                raise ConfigError(
                    f"sim knob {key} is {knobs[key]} in --sim but {value} in model spec {text!r}"
                )
            knobs[key] = value
        return replace(base, name=name, sim=knobs)
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
    return replace(base, name=name, base_url=url or base.base_url)


def split_models(text: str) -> list[str]:
    """``--models`` text into model specs: commas separate models, except that a part
    that is ``KEY=VALUE`` continues the spec before it (``sim,sim:noise_arithmetic=0.05,seed=3``
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


def make_backend(spec: ModelSpec, known: Mapping[str, Fraction] | None = None) -> Backend:
    """Build the backend ``spec`` names; refuses bad settings before anything is sent.

    ``known`` gives the oracle targets that no state reveals (``harness.check.oracle_for``).
    """
    if spec.name == "sim":
        from harness.backends.sim import SimModel, SimParams

        return SimModel(SimParams.parse(spec.sim))
    if spec.sim:
        raise ConfigError("--sim knobs apply only to --model sim")
    if spec.name == "oracle":
        from harness.backends.oracle import Oracle

        return Oracle(known)
    import os

    from harness.backends.systemone import DEFAULT_BASE_URL, SystemOneBackend, normalise_base_url

    base = spec.base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL
    hosted = normalise_base_url(base) == normalise_base_url(DEFAULT_BASE_URL)
    if hosted and not os.environ.get("TYPESAFE_API_KEY", "").strip():
        # Fail before a run folder exists: every request to the hosted API would be a 401.
        raise ConfigError(
            f"model {spec.name!r} is served by the hosted TypeSafe API, which needs a key: "
            "set TYPESAFE_API_KEY, or pass --base-url for another server, or use --model sim"
        )

    return SystemOneBackend(
        spec.name,
        base_url=spec.base_url,
        concurrency=spec.concurrency,
        timeout_s=spec.timeout_s,
        price_per_million=spec.price_per_million,
    )
