"""One module per ``numericjev`` subcommand; each exposes ``register(subparsers)``.

``register`` adds its parser and sets ``func`` to a callable taking the parsed namespace
and returning the exit status. Modules are imported lazily by name so that ``--help`` and
fast commands do not pay for heavy imports.
"""

from __future__ import annotations

COMMANDS = ("check",)
