"""One module per ``numericjev`` subcommand; each exposes ``register(subparsers)``.

``register`` adds its parser and sets ``func`` to a callable taking the parsed namespace
and returning the exit status. Each module imports its heavy dependencies inside ``run``
so that ``--help`` stays fast. ``common`` and ``model_options`` hold what several share.

May import every concept below it (running, spreading, comparing and what they use);
only ``harness.cli`` imports the commands.
"""

from __future__ import annotations

COMMANDS = (
    "compare",
    "run",
    "resume",
    "listing",
    "status",
    "check",
    "import_predictions",
    "serve_sim",
    "merge",
    "compact",
    "cache",
    "config",
    "probe",
)
