"""The element algebra of the attention pass (``attention.py``): exact, small and quick to import.

The pass gives each value of a softmax chain an element expression and asks whether two of them
are equal. The expressions it meets are sums of terms ``c * a1^k1 * a2^k2 ...`` with a rational
``c`` and integer powers (negative ones too: the softmax divides by its row sum), over these
atoms:

* the symbols of ``attention._Chain`` (``x``, ``xm``, ``dp``, ``m``);
* ``exp(M)`` for a monomial ``M``, whose power is a rational: ``exp(c * M)``. An ``exp`` of a sum
  is the product of the ``exp`` of its terms, so a normal form never holds ``exp`` of a sum and
  ``exp(a) * exp(-a)`` is 1;
* ``sig(E)``, the row sum of the expression ``E`` (an opaque function of its argument).

Such a sum, its terms merged and its zero terms dropped, is a normal form: two expressions are
equal as functions of algebraically independent atoms exactly when their normal forms are equal
(the ``x``, ``exp`` and ``sig`` atoms are treated as independent, as the pass needs). Division
by a sum of several terms has no such form: ``NotLaurent`` is raised and the pass stops
following that chain (so does a power of a sum above ``_MAX_POWER``, whose expansion would be
large).
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["Expr", "NotLaurent", "sym", "exp", "sig", "const"]


class NotLaurent(ArithmeticError):
    """A result outside the algebra (a division by a sum of several terms or by zero), or one it
    will not expand (a power of a sum above ``_MAX_POWER``)."""


_MAX_POWER = 8


def _monomial(powers: dict) -> tuple:
    return tuple(sorted((a, p) for a, p in powers.items() if p != 0))


def _mul_monomials(m1: tuple, m2: tuple) -> tuple:
    if not m1:
        return m2
    if not m2:
        return m1
    powers = dict(m1)
    for a, p in m2:
        powers[a] = powers.get(a, 0) + p
    return _monomial(powers)


class Expr:
    """A sum of terms: ``terms`` maps a monomial (a sorted tuple of ``(atom, power)``) to its
    nonzero ``Fraction`` coefficient. Immutable; ``==`` is equality of the normal forms."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self._hash = None

    # -- arithmetic --------------------------------------------------------------------------
    def __add__(self, other):
        other = const(other)
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Expr(terms)

    __radd__ = __add__

    def __neg__(self):
        return Expr({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-const(other))

    def __rsub__(self, other):
        return const(other) - self

    def __mul__(self, other):
        other = const(other)
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = _mul_monomials(m1, m2)
                terms[m] = terms.get(m, 0) + c1 * c2
        return Expr(terms)

    __rmul__ = __mul__

    def __pow__(self, k: int):
        if not isinstance(k, int):
            raise NotLaurent(f"a power {k!r} that is not an integer")
        if len(self.terms) == 1:  # (a term: its powers times k)
            ((m, c),) = self.terms.items()
            return Expr({_monomial({a: p * k for a, p in m}): Fraction(c) ** k})
        if k < 0 or (k > _MAX_POWER and self.terms):
            raise NotLaurent("the inverse of zero or of a sum of terms, or a large power of one")
        out = const(1)
        for _ in range(k):
            out = out * self
        return out

    def __truediv__(self, other):
        return self * const(other) ** -1

    def __rtruediv__(self, other):
        return const(other) * self**-1

    # -- questions ---------------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Expr):
            if isinstance(other, (int, Fraction, float)):
                other = const(other)
            else:
                return NotImplemented
        return self.terms == other.terms

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self.key())
        return self._hash

    def key(self) -> tuple:
        """The normal form as a sorted tuple (hashable, ordered)."""
        return tuple(sorted(self.terms.items()))

    def number(self) -> Fraction | None:
        """The value of a constant expression (0 for zero), else None."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and () in self.terms:
            return Fraction(self.terms[()])
        return None

    def symbols(self) -> frozenset:
        """The names of the symbols anywhere in the expression (in ``exp`` and ``sig`` too)."""
        out: set = set()
        for m in self.terms:
            _monomial_symbols(m, out)
        return frozenset(out)

    def size(self) -> int:
        """A measure of the expression's size: its atoms, counted in every argument."""
        return sum(1 + _monomial_size(m) for m in self.terms)

    def items(self):
        """The ``(monomial, coefficient)`` terms."""
        return self.terms.items()

    def __repr__(self):
        if not self.terms:
            return "0"
        return " + ".join(
            f"{c}" + "".join(f"*{_atom_repr(a)}^{p}" for a, p in m) for m, c in self.key()
        )


def _atom_repr(a) -> str:
    if a[0] == "s":
        return a[1]
    if a[0] == "e":
        return f"exp({'*'.join(f'{_atom_repr(b)}^{p}' for b, p in a[1]) or '1'})"
    return f"sig({Expr(dict(a[1]))!r})"


def _monomial_symbols(m: tuple, out: set) -> None:
    for a, _ in m:
        if a[0] == "s":
            out.add(a[1])
        elif a[0] == "e":
            _monomial_symbols(a[1], out)
        else:
            for mm, _c in a[1]:
                _monomial_symbols(mm, out)


def _monomial_size(m: tuple) -> int:
    n = 0
    for a, _ in m:
        n += 1
        if a[0] == "e":
            n += _monomial_size(a[1])
        elif a[0] == "g":
            n += sum(1 + _monomial_size(mm) for mm, _c in a[1])
    return n


def const(v) -> Expr:
    """``v`` (an ``Expr``, or an exact number: an int, a ``Fraction`` or a float, taken
    exactly) as an ``Expr``."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, Fraction, float)):
        raise TypeError(f"not a number: {v!r}")
    return Expr({(): Fraction(v)})


def sym(name: str) -> Expr:
    """The symbol ``name``."""
    return Expr({((("s", name), 1),): Fraction(1)})


def exp(e: Expr) -> Expr:
    """``exp(e)``: the product of ``exp(c * M)`` over ``e``'s terms ``c * M``."""
    powers: dict = {}
    for m, c in e.terms.items():
        a = ("e", m)
        powers[a] = powers.get(a, 0) + c
    return Expr({_monomial(powers): Fraction(1)})


def sig(e: Expr) -> Expr:
    """The row sum of ``e`` as an atom (``e`` already has its row constants taken out)."""
    return Expr({((("g", e.key()), 1),): Fraction(1)})


def varies(a, along: frozenset) -> bool:
    """Whether the atom ``a`` depends on a symbol of ``along`` outside any ``sig``."""
    if a[0] == "s":
        return a[1] in along
    if a[0] == "e":
        return any(varies(b, along) for b, _ in a[1])
    return False


def row_sum(e: Expr, along: frozenset) -> Expr | None:
    """The sum of ``e`` along a row whose elements vary with the symbols ``along``: each term's
    factors that do not vary are taken out, the rest become a ``sig`` atom. None when a term is
    constant along the row (its sum is the row's length times it: not a softmax)."""
    total = const(0)
    for m, c in e.terms.items():
        inner = tuple((a, p) for a, p in m if varies(a, along))
        if not inner:
            return None
        outer = tuple((a, p) for a, p in m if not varies(a, along))
        total = total + Expr({outer: c}) * sig(Expr({inner: Fraction(1)}))
    return total
