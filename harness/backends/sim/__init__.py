"""The built-in simulated model, with the paper's mechanics as knobs (its results are simulated).

``perception`` reads the state: the base result z, mapped through the affine transform
the expression writes, with arithmetic slips drawn once per state. ``questions`` reads a
question once: its options ranked, its position prior, the hard features it shows.
``answering`` turns both into a distribution over the options (misreadings, Gaussian
confusion, look-alikes, the position prior), draws the choice from it and reports it.
``model`` is the backend. Everything comes from hashing the seed with the body, so the
in-process model and ``numericjev serve-sim`` give identical answers.
"""

from harness.backends.sim.model import SimModel
from harness.backends.sim.params import KNOBS, SimParams

__all__ = ["KNOBS", "SimModel", "SimParams"]
