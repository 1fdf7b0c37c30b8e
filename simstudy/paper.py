"""The paper's published figures, as profiles (its Tables 1-2, the sensitivity table and
the exploratory table): what the sim's defaults aim at and ``sim-vs-paper`` prints beside."""

from __future__ import annotations

from simstudy.profile import Profile

_DECODERS = ("direct", "tree2", "tree4", "tree10", "digits", "bits")
_DOMAINS = ("int", "x0.01", "minus50", "x10000")

# Table "Fixed affine-grid evaluation": MAPE and NMAE, arithmetic and provided.
_MAIN = {
    "direct": (21.68, 3.79, 5.18, 1.37),
    "tree2": (16.88, 0.00, 1.76, 0.00),
    "tree4": (17.25, 1.27, 1.60, 0.03),
    "tree10": (19.73, 2.93, 1.84, 0.06),
    "digits": (84.43, 59.82, 9.92, 5.42),
    "bits": (95.13, 77.90, 24.56, 21.76),
}
# Table "Arithmetic MAPE by affine domain".
_DOMAIN = {
    "direct": (0.00, 2.72, 83.47, 0.52),
    "tree2": (3.19, 2.21, 56.47, 5.63),
    "tree4": (0.78, 2.39, 63.38, 2.42),
    "tree10": (0.50, 0.51, 46.94, 30.96),
    "digits": (1.21, 13.07, 298.93, 24.53),
    "bits": (42.21, 52.13, 200.26, 85.91),
}
# Table "Sensitivity as a percentage of the numerical range": ordering gap and affine gap.
_SENSITIVITY = {
    "direct": (1.23, 0.78, 6.91, 1.82),
    "tree2": (0.72, 0.00, 2.58, 0.00),
    "tree4": (0.88, 0.05, 2.09, 0.03),
    "tree10": (0.56, 0.12, 2.44, 0.08),
    "digits": (2.02, 2.23, 12.70, 7.22),
    "bits": (5.11, 2.82, 16.50, 18.15),
}
# Table "Exploratory arithmetic MAPE" (overall column), by this harness's decoder names.
EXPLORATORY = {
    "direct": 3.37,
    "tree4": 2.42,
    "sets": 8.48,
    "actual_digits": 15.85,
    "adaptive_thresholds": 12.31,
    "parallel_thresholds": 11.29,
    "actual_bits": 25.27,
}


def affine_profile() -> Profile:
    """The paper's affine-suite figures as a profile (percent)."""
    out: Profile = {}
    for d in _DECODERS:
        mape_a, mape_p, nmae_a, nmae_p = _MAIN[d]
        order_a, order_p, affine_a, affine_p = _SENSITIVITY[d]
        out |= {
            f"mape/{d}/arithmetic": mape_a,
            f"mape/{d}/provided": mape_p,
            f"nmae/{d}/arithmetic": nmae_a,
            f"nmae/{d}/provided": nmae_p,
            f"ordering_gap/{d}/arithmetic": order_a,
            f"ordering_gap/{d}/provided": order_p,
            f"affine_gap/{d}/arithmetic": affine_a,
            f"affine_gap/{d}/provided": affine_p,
        }
        for domain, value in zip(_DOMAINS, _DOMAIN[d], strict=True):
            out[f"mape/{d}/arithmetic/{domain}"] = value
    return out


def exploratory_profile() -> Profile:
    """The paper's exploratory MAPE per decoder (arithmetic condition, all 12 questions)."""
    return {f"mape/{d}/arithmetic": v for d, v in EXPLORATORY.items()}
