"""NumericJev analysis: reads a run folder and computes the paper's metrics, family-bootstrap
intervals, tables, figures and run-to-run diffs.

The run folder (manifest.json, outputs.jsonl, requests.jsonl) is the only contract with
the harness: nothing here imports ``harness`` or ``suites``. The flow runs one way::

    loading/     run folder -> runfolder.Manifest, Outputs, RequestLog, Run (names, exact parsing),
                 AnswerLog (interval paths joined with their answers, streamed)
    statistics/  -> Design (the tables' rows and columns), Metrics, BootstrapResult, RunFacts,
                 Analysis, RunDiff, suite computations,
                 ProbabilityStats / ProbabilityDiff (first divergence, calibration, orders)
                 Comparison (a comparison folder's runs: paired differences against the first
                 model, Holm-corrected verdicts), FamilyTest (the verdict test: a paired
                 difference over families with its interval and p, for compare, diff, power)
    rendering/   -> Markdown tables, JSON objects, figures, the report folder, the
                 comparison summary
    cli.py       analyze | report | diff (and a comparison's summary, for compare)

Each layer imports only the layers above it in this list (and ``errors``).
"""

from .errors import (
    AnalysisError,
    DiffRefusedError,
    LogFormatError,
    RunFolderError,
    SelectionError,
    StrictRefusedError,
)
from .loading.columns.exact import output_errors, parse_decimal
from .loading.comparison import ComparisonRuns, load_comparison_runs
from .loading.logs.exchanges import RequestLog, load_requests
from .loading.logs.outputs import LogStats, Outputs, find_output, load_outputs
from .loading.names import decoder_label, order_decoders
from .loading.probabilities.answers import AnswerLog, load_answers
from .loading.run import Run, load_run
from .loading.viewer.paths import DecisionPath, PathLevel, decision_path

# The suite modules register their tables and JSON sections when imported; importing them
# here makes the registrations happen before any `analysis` submodule is used.
from .rendering.bitprompts import bitprompt_tables
from .rendering.comparison import comparison_markdown, comparison_to_dict
from .rendering.diff_tables import diff_markdown, diff_tables, diff_to_dict
from .rendering.exploratory import exploratory_tables, threshold_table
from .rendering.historical import history_tables
from .rendering.json_numbers import analysis_to_dict, register_numbers
from .rendering.markdown import Table
from .rendering.report import analysis_markdown, select_path, write_report
from .rendering.tables import TableBuilder, build_tables, register_tables
from .rendering.transfer import transfer_table
from .statistics.banners import Banner, diff_banners, run_banners
from .statistics.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    BootstrapResult,
    family_bootstrap,
    paired_replicates,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .statistics.comparison import Comparison, SuiteComparison, compare_runs
from .statistics.design import Design, design_of
from .statistics.diff import ChangedOutput, RunDiff, check_comparable, diff_runs
from .statistics.exploratory import ThresholdDecreases, threshold_decreases
from .statistics.facts import ORACLE_NOTICE, SIMULATED_NOTICE, RunFacts, run_facts
from .statistics.family_test import FamilyTest, paired_family_test
from .statistics.historical import HistoryReadout, history_readouts
from .statistics.metrics import (
    STATISTICS,
    FamilyTotals,
    Metrics,
    affine_pairs,
    compute_metrics,
    family_totals,
    ordering_pairs,
)
from .statistics.multiple import bootstrap_p_values, holm
from .statistics.paired import PairedTotals, common_outputs, common_with_reference
from .statistics.probabilities import (
    ProbabilityDiff,
    ProbabilityStats,
    diff_probabilities,
    probability_stats,
)
from .statistics.summary import Analysis, analyze_run

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "MIN_FAMILIES",
    "ORACLE_NOTICE",
    "SIMULATED_NOTICE",
    "STATISTICS",
    "Analysis",
    "AnalysisError",
    "AnswerLog",
    "Banner",
    "BootstrapResult",
    "ChangedOutput",
    "Comparison",
    "ComparisonRuns",
    "DecisionPath",
    "Design",
    "DiffRefusedError",
    "FamilyTest",
    "FamilyTotals",
    "HistoryReadout",
    "LogFormatError",
    "LogStats",
    "Metrics",
    "Outputs",
    "PairedTotals",
    "PathLevel",
    "ProbabilityDiff",
    "ProbabilityStats",
    "RequestLog",
    "Run",
    "RunDiff",
    "RunFacts",
    "RunFolderError",
    "SelectionError",
    "StrictRefusedError",
    "SuiteComparison",
    "Table",
    "TableBuilder",
    "ThresholdDecreases",
    "affine_pairs",
    "analysis_markdown",
    "analysis_to_dict",
    "analyze_run",
    "bitprompt_tables",
    "bootstrap_p_values",
    "build_tables",
    "check_comparable",
    "common_outputs",
    "common_with_reference",
    "compare_runs",
    "comparison_markdown",
    "comparison_to_dict",
    "compute_metrics",
    "decision_path",
    "decoder_label",
    "design_of",
    "diff_banners",
    "diff_markdown",
    "diff_probabilities",
    "diff_runs",
    "diff_tables",
    "diff_to_dict",
    "exploratory_tables",
    "family_bootstrap",
    "family_totals",
    "find_output",
    "history_readouts",
    "history_tables",
    "holm",
    "load_answers",
    "load_comparison_runs",
    "load_outputs",
    "load_requests",
    "load_run",
    "order_decoders",
    "ordering_pairs",
    "output_errors",
    "paired_family_test",
    "paired_replicates",
    "parse_decimal",
    "percentile_interval",
    "probability_stats",
    "ratio_replicates",
    "register_numbers",
    "register_tables",
    "resample_weights",
    "run_banners",
    "run_facts",
    "select_path",
    "threshold_decreases",
    "threshold_table",
    "transfer_table",
    "write_report",
]
