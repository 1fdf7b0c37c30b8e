"""The operator's settings: ``numericjev.toml`` files, named model profiles and ``[defaults]``.

Where a setting comes from, nearest first, is docs/usage.md's list; ``resolve`` merges the
layers once, as the parser's defaults (``settings``). A profile resolves to a model spec's
text (``harness.backends.parse_model`` reads it, as any spec), so a run's manifest records
the resolved spec, never the file; a key never enters a file (``key_env`` names its variable).

May import the backends (model specs) and errors; only the commands and the CLI import it.
"""

from __future__ import annotations

from harness.config.settings import Settings, load_settings, resolve

__all__ = ["Settings", "load_settings", "resolve"]
