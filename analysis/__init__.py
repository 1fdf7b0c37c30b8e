"""NumericJev analysis: reads a run folder and computes the paper's metrics, family-bootstrap
intervals, tables, figures and run-to-run diffs.

The run folder (manifest.json, outputs.jsonl, requests.jsonl) is the only contract with
the harness: nothing here imports ``harness`` or ``suites``.
"""

from .bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    BootstrapResult,
    family_bootstrap,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .diff import ChangedOutput, RunDiff, check_comparable, diff_runs
from .diff_tables import diff_markdown, diff_tables, diff_to_dict
from .errors import (
    AnalysisError,
    DiffRefusedError,
    LogFormatError,
    RunFolderError,
    SelectionError,
)
from .exact import output_errors, parse_decimal
from .exchanges import RequestLog, load_requests

# The suite modules register their tables and JSON sections when imported; importing them
# here makes the registrations happen before any `analysis` submodule is used.
from .exploratory import (
    ThresholdDecreases,
    exploratory_tables,
    threshold_decreases,
    threshold_table,
)
from .facts import SIMULATED_NOTICE, RunFacts, run_facts
from .historical import HistoryReadout, history_readouts, history_tables
from .manifest import Manifest, ModelSpec, load_manifest
from .markdown import Table
from .metrics import (
    STATISTICS,
    FamilyTotals,
    Metrics,
    affine_pairs,
    compute_metrics,
    family_totals,
    ordering_pairs,
)
from .names import decoder_label, order_decoders
from .outputs import LogStats, Outputs, find_output, load_outputs
from .paths import DecisionPath, PathLevel, decision_path
from .report import analysis_markdown, select_path, write_report
from .run import Design, Run, design_of, load_run
from .summary import Analysis, analysis_to_dict, analyze_run, register_numbers
from .tables import TableBuilder, build_tables, register_tables

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "SIMULATED_NOTICE",
    "STATISTICS",
    "Analysis",
    "AnalysisError",
    "BootstrapResult",
    "ChangedOutput",
    "DecisionPath",
    "Design",
    "DiffRefusedError",
    "FamilyTotals",
    "HistoryReadout",
    "LogFormatError",
    "LogStats",
    "Manifest",
    "Metrics",
    "ModelSpec",
    "Outputs",
    "PathLevel",
    "RequestLog",
    "Run",
    "RunDiff",
    "RunFacts",
    "RunFolderError",
    "SelectionError",
    "Table",
    "TableBuilder",
    "ThresholdDecreases",
    "affine_pairs",
    "analysis_markdown",
    "analysis_to_dict",
    "analyze_run",
    "build_tables",
    "check_comparable",
    "compute_metrics",
    "decision_path",
    "decoder_label",
    "design_of",
    "diff_markdown",
    "diff_runs",
    "diff_tables",
    "diff_to_dict",
    "exploratory_tables",
    "family_bootstrap",
    "family_totals",
    "find_output",
    "history_readouts",
    "history_tables",
    "load_manifest",
    "load_outputs",
    "load_requests",
    "load_run",
    "order_decoders",
    "ordering_pairs",
    "output_errors",
    "parse_decimal",
    "percentile_interval",
    "ratio_replicates",
    "register_numbers",
    "register_tables",
    "resample_weights",
    "run_facts",
    "select_path",
    "threshold_decreases",
    "threshold_table",
    "write_report",
]
