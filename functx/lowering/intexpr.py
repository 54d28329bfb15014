"""Integer index expressions: what the loop IR indexes buffers with, without SymPy.

An expression is an immutable, hashable ``IntExpr``: an integer (``Int``), a loop symbol
(``Sym``, non-negative), a sum (``Add``), a product (``Mul``), a power of a factor (``Pow``),
floor division and remainder of non-negative integers (``FloorDiv``, ``ModI``), a guard clamp
(``Guard``: see ``loopir.guard_clamp``) and the max/min of several (``IMax``, ``IMin``).

Canonical form. Sums and products are kept expanded: a sum is an integer constant plus a map
from *cores* (a symbol, a function node, or a product of such factors with powers) to non-zero
integer coefficients, so two equal polynomials are the same object shape, compare equal and
hash alike, and ``a - a`` is ``0``. Building a node applies the simplifications the lowering
relied on SymPy for, and no others (so the generated code stays as SymPy made it):
constant folding; ``x // 1 = x``, ``0 // b = 0``, ``x % 1 = 0``; a guard clamp of numbers is
its clamp; max/min are flattened, their numbers folded, and an argument that interval
arithmetic on the differences (``index_bounds``) proves never the extremum is dropped.
Further rewriting (a division decided by the loop's bounds) is the scheduler's
(``schedule._simplify``).

Order. The arguments of a sum or product are held in SymPy's canonical order
(``Basic.compare``: numbers, symbols by name, powers, products, then the functions by class
name), and those of a max/min in SymPy's ``default_sort_key`` order, so the printers
(``common.IndexPrinter``) write the same text SymPy's expressions gave. ``Int`` compares and
hashes equal to the Python int of its value.

The names follow SymPy's where they do the same (``args``, ``func``, ``free_symbols``,
``subs``, ``xreplace``, ``has``, ``is_Integer``, ``as_coeff_Mul``...), so code reading index
expressions reads either; SymPy stays only the reference of the tests
(``tests/lowering/test_intexpr.py``).
"""

from __future__ import annotations

import math

_INF = math.inf


class IntExpr:
    """An integer index expression (see the module docstring)."""

    __slots__ = ("args", "_h", "_fs", "_ck", "_sk")
    is_Integer = is_Number = is_Symbol = is_Atom = is_Add = is_Mul = is_Pow = False
    is_integer = True

    # --- construction helpers --------------------------------------------------------------
    def _init(self, args, h):
        self.args = args
        self._h = h
        self._fs = self._ck = self._sk = None
        return self

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        if self is other:
            return True
        if isinstance(other, IntExpr):
            return type(self) is type(other) and self._h == other._h and self.args == other.args
        return NotImplemented if not isinstance(other, int) else False

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __reduce__(self):
        return (type(self), self.args)

    # --- arithmetic --------------------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return add(self, mul(-1, other))

    def __rsub__(self, other):
        return add(other, mul(-1, self))

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def __neg__(self):
        return mul(-1, self)

    def __pos__(self):
        return self

    # --- SymPy's reading API -----------------------------------------------------------------
    @property
    def func(self):
        return type(self)

    @property
    def free_symbols(self) -> frozenset:
        fs = self._fs
        if fs is None:
            fs = self._fs = frozenset().union(*(a.free_symbols for a in self.args))
        return fs

    def has(self, *types) -> bool:
        return any(isinstance(x, types) for x in preorder(self))

    def xreplace(self, mapping):
        """``self`` with each subexpression that is a key of ``mapping`` replaced by its value,
        rebuilt (so simplified) where anything changed."""
        if not mapping:
            return self
        return _replace(self, mapping, {})

    def subs(self, mapping, new=None):
        """``xreplace`` (the lowering substitutes symbols only: the same thing), also as
        ``subs(old, new)``."""
        return self.xreplace(mapping if new is None else {mapping: new})

    def expand(self, deep=True):
        return self  # (kept expanded)

    def as_coeff_Mul(self):
        return Int(1), self

    def __str__(self):
        return _str(self)

    def __repr__(self):
        return _str(self)

    def __format__(self, spec):
        return format(str(self), spec)


def ix(x) -> IntExpr:
    """``x`` (an ``IntExpr`` or a Python/NumPy integer) as an ``IntExpr``: SymPy's ``sympify``
    of an index."""
    if isinstance(x, IntExpr):
        return x
    if isinstance(x, bool):
        raise TypeError(f"not an integer index: {x!r}")
    try:
        v = int(x.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"not an integer index: {x!r}") from None
    return Int(v)


# --- atoms ---------------------------------------------------------------------------------------
_INTS: dict = {}


class Int(IntExpr):
    """An integer."""

    __slots__ = ("value",)
    is_Integer = is_Number = is_Atom = True

    def __new__(cls, value):
        value = int(value)
        hit = _INTS.get(value)
        if hit is not None:
            return hit
        self = object.__new__(cls)._init((), hash(value))
        self.value = value
        self._fs = frozenset()
        if -1024 <= value <= 1024:
            _INTS[value] = self
        return self

    def __reduce__(self):
        return (Int, (self.value,))

    def __eq__(self, other):
        if isinstance(other, Int):
            return self.value == other.value
        if isinstance(other, int):
            return self.value == other
        if isinstance(other, IntExpr):
            return False
        try:
            return self.value == other.__index__()
        except (AttributeError, TypeError):
            return NotImplemented

    def __hash__(self):
        return self._h

    def __int__(self):
        return self.value

    __index__ = __int__

    def __bool__(self):
        return self.value != 0

    def __lt__(self, other):
        return self.value < int(other)

    def __le__(self, other):
        return self.value <= int(other)

    def __gt__(self, other):
        return self.value > int(other)

    def __ge__(self, other):
        return self.value >= int(other)

    @property
    def is_nonnegative(self):
        return self.value >= 0

    def as_coeff_Mul(self):
        return self, Int(1)


class Sym(IntExpr):
    """A non-negative integer symbol (a loop variable)."""

    __slots__ = ("name",)
    is_Symbol = is_Atom = True
    is_nonnegative = True

    def __new__(cls, name):
        self = object.__new__(cls)._init((), hash(("Sym", name)))
        self.name = name
        self._fs = frozenset((self,))
        return self

    def __reduce__(self):
        return (Sym, (self.name,))

    def __eq__(self, other):
        if self is other:
            return True
        if isinstance(other, Sym):
            return self.name == other.name
        return False if isinstance(other, (IntExpr, int)) else NotImplemented

    def __hash__(self):
        return self._h


def Symbol(name: str) -> Sym:
    return Sym(name)


Integer = Int

# --- sums and products ---------------------------------------------------------------------------
# Every value has a polynomial view ``(constant, {core: coefficient})``: a core is a symbol, a
# function node, a power, or a product of those with coefficient 1.


def _poly(e):
    t = type(e)
    if t is Int:
        return e.value, {}
    if t is Add:
        return e._const, e._terms
    if t is Mul:
        return 0, {e._core: e._coeff}
    return 0, {e: 1}


def _from_poly(const: int, terms: dict) -> IntExpr:
    terms = {c: k for c, k in terms.items() if k}
    if not terms:
        return Int(const)
    if const == 0 and len(terms) == 1:
        ((core, k),) = terms.items()
        return _term(core, k)
    self = object.__new__(Add)
    self._const, self._terms = const, terms
    args = sorted((_term(c, k) for c, k in terms.items()), key=_ckey)
    if const:
        args.insert(0, Int(const))
    return self._init(tuple(args), hash(("Add", const, frozenset(terms.items()))))


def _term(core, k: int) -> IntExpr:
    if k == 1:
        return core
    self = object.__new__(Mul)
    self._coeff, self._core = k, core
    factors = core.args if type(core) is Mul else (core,)
    return self._init((Int(k),) + factors, hash(("Mul", k, core)))


def _pows(core) -> dict:
    t = type(core)
    if t is Mul:
        return core._pows
    if t is Pow:
        return {core.args[0]: core.args[1].value}
    return {core: 1}


def _core_of(pows: dict) -> IntExpr:
    factors = sorted((b if n == 1 else Pow._make(b, n) for b, n in pows.items() if n), key=_ckey)
    if len(factors) == 1:
        return factors[0]
    self = object.__new__(Mul)
    self._coeff, self._pows = 1, pows
    self._core = self
    return self._init(tuple(factors), hash(("Mul", 1, frozenset(pows.items()))))


def _core_mul(a, b) -> IntExpr:
    pa, pb = _pows(a), _pows(b)
    out = dict(pa)
    for base, n in pb.items():
        out[base] = out.get(base, 0) + n
    return _core_of(out)


def add(*xs) -> IntExpr:
    """The sum of ``xs`` (canonical: see the module docstring)."""
    const, terms = 0, {}
    for x in xs:
        c, ts = _poly(ix(x))
        const += c
        for core, k in ts.items():
            terms[core] = terms.get(core, 0) + k
    return _from_poly(const, terms)


def mul(*xs) -> IntExpr:
    """The product of ``xs``, expanded."""
    const, terms = 1, {}
    for x in xs:
        c2, t2 = _poly(ix(x))
        if not t2:
            const *= c2
            terms = {core: k * c2 for core, k in terms.items()}
            continue
        out: dict = {}
        if c2:
            for core, k in terms.items():
                out[core] = out.get(core, 0) + k * c2
        if const:
            for core, k in t2.items():
                out[core] = out.get(core, 0) + const * k
        for c1, k1 in terms.items():
            for c2_, k2 in t2.items():
                core = _core_mul(c1, c2_)
                out[core] = out.get(core, 0) + k1 * k2
        const, terms = const * c2, out
    return _from_poly(const, terms)


class Add(IntExpr):
    """A sum: ``Add(*xs)`` is the canonical sum of ``xs``. ``args``: the constant (if not 0)
    first, then the terms in SymPy's order."""

    __slots__ = ("_const", "_terms")
    is_Add = True

    def __new__(cls, *xs):
        return add(*xs)

    def __reduce__(self):
        return (add, self.args)


class Mul(IntExpr):
    """A product term: an integer coefficient (first of ``args`` when not 1) times a core.
    ``Mul(*xs)`` is the expanded product of ``xs``."""

    __slots__ = ("_coeff", "_core", "_pows")
    is_Mul = True

    def __new__(cls, *xs):
        return mul(*xs)

    def __reduce__(self):
        return (mul, self.args)

    def as_coeff_Mul(self):
        if self._coeff == 1:
            return Int(1), self
        return Int(self._coeff), self._core


class Pow(IntExpr):
    """A factor to an integer power above 1 (``i*i``)."""

    __slots__ = ()
    is_Pow = True

    def __new__(cls, base, n):
        n = int(n)
        out = Int(1)
        for _ in range(n):
            out = mul(out, base)
        return out

    @classmethod
    def _make(cls, base, n):
        return object.__new__(cls)._init((base, Int(n)), hash(("Pow", base, n)))

    def __reduce__(self):
        return (Pow, (self.args[0], self.args[1].value))


def add_args(e) -> tuple:
    """The terms of ``e`` (SymPy's ``Add.make_args``)."""
    e = ix(e)
    return e.args if type(e) is Add else (e,)


# --- functions -----------------------------------------------------------------------------------
class _Fn(IntExpr):
    """A node applied to index arguments (division, remainder, clamps)."""

    __slots__ = ()

    @classmethod
    def _make(cls, args):
        return object.__new__(cls)._init(tuple(args), hash((cls.__name__,) + tuple(args)))


class FloorDiv(_Fn):
    """Integer division of non-negative integers (printed as C ``/``)."""

    __slots__ = ()

    def __new__(cls, a, b):
        a, b = ix(a), ix(b)
        if b == 1:
            return a
        if a.is_Integer and b.is_Integer:
            return Int(a.value // b.value)
        if a == 0:
            return Int(0)
        return cls._make((a, b))


class ModI(_Fn):
    """Remainder of non-negative integers (printed as C ``%``)."""

    __slots__ = ()

    def __new__(cls, a, b):
        a, b = ix(a), ix(b)
        if b == 1:
            return Int(0)
        if a.is_Integer and b.is_Integer:
            return Int(a.value % b.value)
        return cls._make((a, b))


class Guard(_Fn):
    """``Guard(v, c)``: the index ``c``, a clamp of ``v`` that pad or concatenate read their
    operand at (see ``loopir.guard_clamp``). Equal to ``c``; kept apart so that
    ``loopir.unclamped`` can recover ``v``."""

    __slots__ = ()

    def __new__(cls, v, c):
        v, c = ix(v), ix(c)
        if v.is_Integer and c.is_Integer:
            return c
        return cls._make((v, c))


def _mul_bounds(a, b):
    """The interval of ``x * y`` for ``x`` in ``a`` and ``y`` in ``b`` (closed, possibly
    unbounded; 0 times an infinite bound counts as 0, right for integers)."""
    prods = [0 if 0 in (x, y) else x * y for x in a for y in b]
    return min(prods), max(prods)


def index_bounds(e) -> tuple:
    """An interval ``(lo, hi)`` (Python numbers, ``-inf``/``inf`` where unknown) that holds every
    value of the integer index expression ``e``, by interval arithmetic on its tree: symbols are
    non-negative, a remainder ``ModI(a, b)`` lies in ``[0, b)``. Cached."""
    try:
        return _bounds_cache[e]
    except KeyError:
        pass
    except TypeError:
        return (-_INF, _INF)
    r = _index_bounds(ix(e))
    if len(_bounds_cache) > 100_000:
        _bounds_cache.clear()
    _bounds_cache[e] = r
    return r


_bounds_cache: dict = {}


def _index_bounds(e) -> tuple:
    t = type(e)
    if t is Int:
        return (e.value, e.value)
    if t is Sym:
        return (0, _INF)
    if t is Add:
        lo = hi = 0
        for a in e.args:
            alo, ahi = index_bounds(a)
            lo, hi = lo + alo, hi + ahi
        return (lo, hi)
    if t is Mul or t is Pow:
        out = (1, 1)
        factors = e.args if t is Mul else (e.args[0],) * e.args[1].value
        for a in factors:
            out = _mul_bounds(out, index_bounds(a))
        return out
    if t is Guard:
        return index_bounds(e.args[1])
    if t is IMax or t is IMin:
        bs = [index_bounds(a) for a in e.args]
        pick = max if t is IMax else min
        return (pick(b[0] for b in bs), pick(b[1] for b in bs))
    b = e.args[1]
    if t is ModI and b.is_Integer and b.value > 0:
        return (0, b.value - 1)
    if t is FloorDiv and b.is_Integer and b.value > 0:
        lo, hi = index_bounds(e.args[0])
        return (lo // b.value if lo != -_INF else lo, hi // b.value if hi != _INF else hi)
    return (-_INF, _INF)


def _extremum(cls, args):
    """The arguments left of ``cls`` (``IMax``/``IMin``) of ``args`` (flattened, numbers folded)
    once those that interval arithmetic on their difference proves never the extremum are
    dropped (of equal ones, the first is kept)."""
    is_max = cls is IMax
    flat = []
    for a in args:
        a = ix(a)
        flat.extend(a.args if type(a) is cls else (a,))
    nums = [a.value for a in flat if a.is_Integer]
    kept = []
    for a in flat:
        if not a.is_Integer and a not in kept:
            kept.append(a)
    if nums:
        kept.append(Int(max(nums) if is_max else min(nums)))
    if len(kept) < 2:
        return kept

    def at_least(b, a):  # is ``b`` always at least as extreme as ``a``?
        lo, hi = index_bounds(b - a)
        return lo >= 0 if is_max else hi <= 0

    out = []
    for i, a in enumerate(kept):
        if not any(
            j != i and at_least(b, a) and (j < i or not at_least(a, b)) for j, b in enumerate(kept)
        ):
            out.append(a)
    return out


class _Extremum(_Fn):
    """``IMax``/``IMin``: flattened and simplified by interval arithmetic (``_extremum``), the
    arguments in SymPy's ``default_sort_key`` order."""

    __slots__ = ()

    def __new__(cls, *args):
        kept = _extremum(cls, args)
        if len(kept) == 1:
            return kept[0]
        return cls._make(sorted(kept, key=sort_key))


class IMax(_Extremum):
    """The maximum of index expressions."""

    __slots__ = ()


class IMin(_Extremum):
    """The minimum of index expressions."""

    __slots__ = ()


# --- order (SymPy's) -----------------------------------------------------------------------------
# ``Basic.compare``'s class order: these classes by their index in SymPy's list, the function
# classes (not in it) after all of them, by name
_UNKNOWN = 1000
_CLASS_RANK = {"Sym": (13, ""), "Pow": (15, ""), "Mul": (16, ""), "Add": (17, "")}


def _ckey(e):
    """A key ordering expressions as SymPy's ``Basic.compare`` does (its canonical order of the
    arguments of sums and products)."""
    k = e._ck
    if k is None:
        t = type(e)
        if t is Int:
            v = e.value
            rank = (0 if v == 0 else 1 if v == 1 else 5 if v == -1 else 7, "")
            k = (rank, 2, (v, 1))
        elif t is Sym:
            k = (_CLASS_RANK["Sym"], 1, (e.name,))
        else:
            rank = _CLASS_RANK.get(t.__name__) or (_UNKNOWN, t.__name__)
            k = (rank, len(e.args), tuple(_ckey(a) for a in e.args))
        e._ck = k
    return k


_NUMBER_CLASS = (1, 0, "Number")
_ONE_SK = (_NUMBER_CLASS, (0, ()), (), 1)
_CLASS_KEY = {
    "Sym": (2, 0, "Symbol"),
    "Add": (3, 1, "Add"),
    "Mul": (3, 0, "Mul"),
    "Pow": (3, 2, "Pow"),
    "FloorDiv": (4, 10000, "FloorDiv"),
    "ModI": (4, 10000, "ModI"),
    "Guard": (4, 10000, "Guard"),
    "IMax": (5, 0, "IMax"),
    "IMin": (5, 0, "IMin"),
}


def sort_key(e):
    """SymPy's ``default_sort_key`` of ``e`` (the order of a max/min's arguments)."""
    k = e._sk
    if k is None:
        if type(e) is Int:
            k = (_NUMBER_CLASS, (0, ()), (), e.value)
        elif type(e) is Sym:
            k = (_CLASS_KEY["Sym"], (1, (e.name,)), _ONE_SK, 1)
        else:
            coeff, core = e.as_coeff_Mul()
            exp = _ONE_SK
            if type(core) is Pow:
                core, exp = core.args[0], sort_key(core.args[1])
            if type(core) is Sym:
                args = (core.name,)
            else:
                if type(core) is Add:
                    parts = _ordered_terms(core)
                elif type(core) is Mul:
                    parts = sorted(core.args, key=sort_key)
                else:
                    parts = core.args
                args = tuple(sort_key(a) for a in parts)
            k = (_CLASS_KEY[type(core).__name__], (len(args), args), exp, coeff.value)
        e._sk = k
    return k


def _ordered_terms(e):
    """The terms of the sum ``e`` in SymPy's printing order (``as_ordered_terms``, lex): by
    their exponents of the sum's generators (sorted by ``sort_key``), highest first; a positive
    number plus a negative multiple of one factor keeps the number first (``1 - i``)."""
    if len(e.args) == 2:
        c, t = e.args
        if c.is_Integer and c.value > 0 and type(t) is Mul and t._coeff < 0 and len(t.args) == 2:
            return list(e.args)
    gens = sorted({b for core in e._terms for b in _pows(core)}, key=sort_key)
    pos = {g: i for i, g in enumerate(gens)}

    def monom(t):
        _, core = t.as_coeff_Mul()
        v = [0] * len(gens)
        if not t.is_Integer:
            for b, n in _pows(core).items():
                v[pos[b]] = n
        return tuple(v)

    return sorted(e.args, key=monom, reverse=True)


# --- walking -------------------------------------------------------------------------------------
def preorder(e):
    """``e`` and its subexpressions, parents first (SymPy's ``preorder_traversal``)."""
    stack = [ix(e)]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.args))


def _rebuild(e, swap, memo):
    """``e`` with each subexpression ``x`` for which ``swap(x)`` is not None replaced by that
    (not looked into further), rebuilt through the constructors (so simplified) where anything
    changed; unchanged parts stay the same objects."""
    hit = swap(e)
    if hit is not None:
        return ix(hit)
    if not e.args:
        return e
    out = memo.get(e)
    if out is None:
        args = [_rebuild(a, swap, memo) for a in e.args]
        if all(a is b for a, b in zip(args, e.args)):
            out = e
        elif type(e) is Pow:
            out = Pow(args[0], args[1].value)
        else:
            out = type(e)(*args)
        memo[e] = out
    return out


def _replace(e, mapping, memo):
    return _rebuild(e, mapping.get, memo)


def map_nodes(e, cls, fn):
    """``e`` with each node of class ``cls`` replaced by ``fn(node)`` (``fn`` sees the node as
    it is, inner ones untouched), rebuilt where anything changed."""
    if not isinstance(e, IntExpr) or not e.has(cls):
        return e
    return _rebuild(e, lambda x: fn(x) if isinstance(x, cls) else None, {})


def linear_coeff(e, s) -> int | None:
    """The integer coefficient of the symbol ``s`` in ``e`` when ``e`` is ``k*s`` plus terms
    without ``s`` (what differentiating by ``s`` gives then), else None."""
    k = 0
    for t in add_args(e):
        c, core = t.as_coeff_Mul()
        if core == s:
            k += c.value
        elif s in t.free_symbols:
            return None
    return k


def evaluate(e, env: dict):
    """The value of ``e`` with each symbol's name bound in ``env`` (Python or NumPy integers:
    arrays evaluate elementwise, ``//`` and ``%`` as floor division and remainder)."""
    t = type(e)
    if t is Int:
        return e.value
    if t is Sym:
        return env[e.name]
    vals = [evaluate(a, env) for a in e.args]
    if t is Add:
        out = vals[0]
        for v in vals[1:]:
            out = out + v
        return out
    if t is Mul:
        out = vals[0]
        for v in vals[1:]:
            out = out * v
        return out
    if t is Pow:
        return vals[0] ** vals[1]
    if t is FloorDiv:
        return vals[0] // vals[1]
    if t is ModI:
        return vals[0] % vals[1]
    if t is Guard:
        return vals[1]
    import numpy as np

    pick = np.maximum if t is IMax else np.minimum
    out = vals[0]
    for v in vals[1:]:
        out = pick(out, v)
    return out


# --- text ----------------------------------------------------------------------------------------
def _str(e) -> str:
    """SymPy's text of ``e`` (``16*i0 + i1``, ``i0 - 1``, ``Max(0, i0 - 1)``), FloorDiv and
    ModI as ``FloorDiv(a, b)``, ``ModI(a, b)``."""
    t = type(e)
    if t is Int:
        return str(e.value)
    if t is Sym:
        return e.name
    if t is Add:
        out = ""
        for i, a in enumerate(_ordered_terms(e)):
            s = _str(a)
            if s.startswith("-"):
                out += (" - " if i else "-") + s[1:]
            else:
                out += (" + " if i else "") + s
        return out
    if t is Mul:
        c, core = e.as_coeff_Mul()
        factors = sorted(core.args if type(core) is Mul else (core,), key=sort_key)
        body = "*".join(f"({_str(f)})" if type(f) is Add else _str(f) for f in factors)
        if c.value == 1:
            return body
        return "-" + body if c.value == -1 else f"{c.value}*{body}"
    if t is Pow:
        b = e.args[0]
        return f"{'(' + _str(b) + ')' if b.is_Add or b.is_Mul else _str(b)}**{e.args[1].value}"
    name = {"IMax": "Max", "IMin": "Min"}.get(t.__name__, t.__name__)
    return f"{name}({', '.join(_str(a) for a in e.args)})"


__all__ = [
    "IntExpr",
    "Int",
    "Integer",
    "Sym",
    "Symbol",
    "Add",
    "Mul",
    "Pow",
    "FloorDiv",
    "ModI",
    "Guard",
    "IMax",
    "IMin",
    "ix",
    "add",
    "mul",
    "add_args",
    "index_bounds",
    "preorder",
    "map_nodes",
    "linear_coeff",
    "evaluate",
    "sort_key",
]
