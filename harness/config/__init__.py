"""The operator's settings: ``numericjev.toml`` files, named model profiles and ``[defaults]``.

Where a setting comes from, nearest first: the command line; a ``[models.NAME]`` profile that
``--model NAME`` (or ``--models A,B``) names; ``[defaults]`` of ``./numericjev.toml``; the
same of the user's file (``$XDG_CONFIG_HOME/numericjev/numericjev.toml``, else
``~/.config/numericjev/numericjev.toml``); ``$NUMERICJEV_CACHE_MODE`` (``--cache`` only); the
code's defaults (each option's, in its command). ``resolve`` merges them once, as the
parser's defaults. A profile resolves to a model spec's text (``harness.backends.parse_model`` reads
it, as any spec), so a run's manifest records the resolved spec, never the file; a key never
enters a file (refused in one line naming the file and line: ``key_env`` names the variable).

May import the backends (model specs) and errors; only the commands and the CLI import it.
"""

from __future__ import annotations

from harness.config.settings import Settings, load_settings, resolve

__all__ = ["Settings", "load_settings", "resolve"]
