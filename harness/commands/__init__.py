"""One module per ``numericjev`` subcommand: ``register(subparsers)`` sets ``func`` (parsed
namespace -> exit status), which imports the heavy dependencies, so ``--help`` stays fast.

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
