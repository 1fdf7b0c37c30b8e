"""The operator's settings: ``numericjev.toml`` files, named model profiles and ``[defaults]``.

``resolve`` merges the layers docs/usage.md lists once, as the parser's defaults. A profile
resolves to a model spec's text, so a manifest records the spec, never the file.

May import the backends (model specs) and errors; only the commands and the CLI import it.
"""

from __future__ import annotations

from harness.config.settings import Settings, load_settings, resolve

__all__ = ["Settings", "load_settings", "resolve"]
