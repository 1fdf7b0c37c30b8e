"""Exact numerical grids: integer cell indices, decimal bounds, balanced partitions.

A grid is ``(L, eps, N)`` with cells ``[L + i*eps, L + (i+1)*eps)`` for ``i < N``
(paper, Section 3.1). Everything is exact: indices are ints, bounds are Decimals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

from harness.errors import GridError

# Questions carry at most this many options (docs/wire.md: choice criteria, at most 255).
MAX_OPTIONS = 255


def to_decimal(value: Decimal | int | str | Fraction) -> Decimal:
    """Convert exactly to Decimal; a Fraction must have a terminating decimal expansion."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int | str):
        return Decimal(value)
    num, den = value.numerator, value.denominator
    rest = den
    for p in (2, 5):
        while rest % p == 0:
            rest //= p
    if rest != 1:
        raise GridError(f"{value} has no exact decimal form; use a grid step that is a decimal")
    with localcontext() as ctx:
        ctx.prec = 60
        return Decimal(num) / Decimal(den)


def fmt(value: Decimal) -> str:
    """Plain decimal text with no exponent and no trailing zeros: 110000, 0.11, -50."""
    if value == 0:
        return "0"  # never "-0" or "0E+2"
    if value == value.to_integral_value():
        # format(..., "f") rather than quantize: quantize fails past the context precision.
        return format(value.to_integral_value(), "f")
    return format(value.normalize(), "f")


def places(eps: Decimal) -> int:
    """Decimal places needed to write every multiple of ``eps`` (0.01 -> 2, 10000 -> 0)."""
    exponent = eps.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


@dataclass(frozen=True)
class Grid:
    """A finite grid of ``n`` cells of width ``eps`` starting at ``lo``."""

    lo: Decimal
    eps: Decimal
    n: int
    # Bound texts written so far, by index: decoders write the same bounds over and over,
    # and a dict of ints beats a cache keyed on the grid (hashing three Decimals, then
    # comparing them with an equal grid of another case, on every call).
    _texts: dict[int, str] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )
    _values: dict[int, str] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )
    _hash: int = field(default=0, init=False, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if not self.eps.is_finite() or self.eps <= 0:
            raise GridError(f"eps must be a positive number; got eps={self.eps}")
        if not self.lo.is_finite():
            raise GridError(f"L must be a finite number; got L={self.lo}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise GridError(f"N must be a whole number >= 1; got N={self.n}")
        # Grids key the decoders' question caches: hash the three fields once.
        object.__setattr__(self, "_hash", hash((self.lo, self.eps, self.n)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def from_range(
        cls, lo: Decimal | str | int, hi: Decimal | str | int, eps: Decimal | str | int
    ) -> Grid:
        """Build the grid on ``[lo, hi)``; refuses when ``(hi - lo) / eps`` is not whole."""
        lo_d, hi_d, eps_d = _number(lo, "L"), _number(hi, "U"), _number(eps, "eps")
        if eps_d <= 0:
            raise GridError(f"eps must be a positive number; got eps={eps_d}")
        if hi_d <= lo_d:
            raise GridError(f"U must be greater than L; got L={fmt(lo_d)}, U={fmt(hi_d)}")
        n = (Fraction(hi_d) - Fraction(lo_d)) / Fraction(eps_d)
        if n.denominator != 1:
            raise GridError(
                f"N = (U-L)/eps must be a whole number; got {_approx(n)} from "
                f"L={fmt(lo_d)}, U={fmt(hi_d)}, eps={fmt(eps_d)}: pick eps that divides U-L"
            )
        return cls(lo_d, eps_d, n.numerator)

    @property
    def hi(self) -> Decimal:
        """The exclusive upper end U = L + N*eps."""
        return self.bound(self.n)

    @property
    def places(self) -> int:
        """Decimal places of a grid value."""
        return max(places(self.eps), places(self.lo))

    def bound(self, index: int) -> Decimal:
        """The lower bound of cell ``index`` (also valid for index == N and beyond)."""
        return self.lo + self.eps * index

    def bound_text(self, index: int) -> str:
        """``fmt(bound(index))``, memoised: decoders write the same bounds over and over."""
        text = self._texts.get(index)
        if text is None:
            text = self._texts[index] = fmt(self.bound(index))
        return text

    def value_text(self, index: int) -> str:
        """A cell's lower endpoint written with the grid's places: 11.00 at eps 0.01
        (memoised: every output of a job on this grid writes one)."""
        text = self._values.get(index)
        if text is None:
            quantum = Decimal(1).scaleb(-self.places)
            text = self._values[index] = format(self.bound(index).quantize(quantum), "f")
        return text

    def index_of(self, x: Fraction) -> int:
        """The index of the cell holding ``x`` (may lie outside ``[0, N)``)."""
        q = (x - Fraction(self.lo)) / Fraction(self.eps)
        return q.numerator // q.denominator


def _number(value: Decimal | str | int, name: str) -> Decimal:
    """A finite decimal, or a GridError naming the bad input."""
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except ArithmeticError:
        number = Decimal("NaN")
    if not number.is_finite():
        raise GridError(f"{name} must be a finite decimal number; got {value!r}")
    return number


def _approx(q: Fraction) -> str:
    """A short approximate rendering that cannot overflow, for error messages."""
    whole, rest = divmod(q.numerator, q.denominator)
    text = str(whole)
    if len(text) > 15:
        return f"about {text[0]}.{text[1:4]}e{len(text) - 1}"
    return f"{whole + rest / q.denominator:g}"


def partition(a: int, b: int, k_max: int) -> list[int]:
    """Algorithm 1's cut points ``t_j = a + floor((b-a) j / k)`` with ``k = min(K, b-a)``."""
    if k_max < 2:
        raise GridError(f"the branching factor K must be at least 2; got K={k_max}")
    if b - a < 1:
        raise GridError(f"an interval needs at least one cell; got [{a}, {b})")
    n = b - a
    k = min(k_max, n)
    return [a + (n * j) // k for j in range(k + 1)]


def check_options(count: int, what: str) -> None:
    """Refuse a question with more options than the wire format allows."""
    if count > MAX_OPTIONS:
        raise GridError(
            f"{what} would ask one question with {count} options; the interface allows at most "
            f"{MAX_OPTIONS}: use a coarser grid or an interval tree"
        )
