"""What a run asks, and how an answer reads, with no I/O: exact grids and arithmetic, cases
and suites, the paper's prompts and their exact meaning, the decoders, the suites registry.

May import ``harness.errors`` only; inside, grid/arith < prompts/cases < meaning < decoders <
registry (``tests/test_architecture.py``).
"""
