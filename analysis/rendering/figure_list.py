"""The one list of figures that ``numericjev report`` draws, for report.md and index.html."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from analysis.loading.viewer.paths import DecisionPath
from analysis.statistics.summary import Analysis

from .distribution_figure import distribution_figures
from .figures import decision_path_figure, domain_figure, nmae_figure, within5_figure
from .probability_figure import reliability_figures

__all__ = ["report_figures"]


def report_figures(a: Analysis, path: DecisionPath | None) -> list[tuple[str, str, Figure]]:
    """Every figure of ``numericjev report`` as (file stem, caption, figure), in page order.

    The Markdown report and the HTML page both show exactly this list, so a figure added
    here appears in both without further code.
    """
    f = a.facts
    shown = np.isfinite(a.bootstrap.lo).any()
    bars = "with family-bootstrap intervals" if shown else "without intervals"
    figures = [
        ("share_within5", f"Share of outputs within 5% APE, {bars}", within5_figure(a)),
        ("nmae", f"NMAE (% of range) per decoder and condition, {bars}", nmae_figure(a)),
    ]
    by_domain = domain_figure(a)
    if by_domain is not None:
        figures.append(
            ("mape_by_domain", "MAPE (%) by domain, per decoder and condition", by_domain)
        )
    if path is not None:  # None: the run has no tree decoder (the bitprompts suite)
        figures.append(
            (
                "decision_path",
                f"Decision path of {path.decoder} for job {path.job}",
                decision_path_figure(path, f.model, f.suite, f.notice),
            )
        )
    return figures + reliability_figures(a) + distribution_figures(a)
