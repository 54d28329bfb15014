"""``functx.tree_util`` round-trips, with jax.tree_util as the reference for the leaf order and
structure of the builtin containers."""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any, NamedTuple

import docutil
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import tree_util as tu


def tree_id(tree):
    """A test id: the repr without object addresses (the same in every pytest process)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(tree))


jax = pytest.importorskip("jax")
jtu = jax.tree_util


class Point(NamedTuple):
    x: Any
    y: Any


class Box:
    """Registered through register_pytree_node: children (lo, hi), aux the name."""

    def __init__(self, lo, hi, name="box"):
        self.lo, self.hi, self.name = lo, hi, name

    def __eq__(self, other):
        return type(other) is Box and (self.lo, self.hi, self.name) == (
            other.lo,
            other.hi,
            other.name,
        )


tu.register_pytree_node(
    Box, lambda b: ((b.lo, b.hi), b.name), lambda name, children: Box(*children, name=name)
)
jtu.register_pytree_node(
    Box, lambda b: ((b.lo, b.hi), b.name), lambda name, children: Box(*children, name=name)
)


@tu.register_pytree_node_class
class Pair:
    def __init__(self, a, b, tag=0):
        self.a, self.b, self.tag = a, b, tag

    def tree_flatten(self):
        return (self.a, self.b), self.tag

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, tag=aux)

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: Any
    b: Any
    name: str = dataclasses.field(default="layer", metadata={"static": True})


@dataclasses.dataclass
class Explicit:
    data: Any
    meta: int


tu.register_dataclass(Explicit, ["data"], ["meta"])  # JAX's positional signature
# and with JAX, at import: the path tests compare with JAX's flattening of it, in whatever
# order (and pytest-xdist worker) the tests run
jtu.register_dataclass(Explicit, ["data"], ["meta"])

BUILTIN_TREES = [
    1.0,
    None,
    (),
    [],
    {},
    (1, 2.0),
    [1, (2, 3), [4]],
    {"b": 1, "a": 2, "c": (3, 4)},
    {"z": {"y": 1, "x": [2, None]}, "a": None},
    (None, 1, None),
    Point(1, [2, 3]),
    Point(x={"k": 1}, y=None),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.defaultdict(list, {"b": 1, "a": [2, 3]}),
    [Point(1, 2), {"q": (3, [4, {"r": 5}])}, None, ()],
]


@pytest.mark.parametrize("tree", BUILTIN_TREES, ids=tree_id)
def test_builtin_containers_vs_jax(tree):
    leaves, treedef = tu.tree_flatten(tree)
    jleaves, jtreedef = jtu.tree_flatten(tree)
    assert leaves == jleaves  # same leaves in the same order
    assert treedef.num_leaves == jtreedef.num_leaves == len(leaves)
    assert treedef.num_nodes == jtreedef.num_nodes
    assert tu.tree_leaves(tree) == jtu.tree_leaves(tree)
    back = tu.tree_unflatten(treedef, leaves)
    assert back == tree and type(back) is type(tree)
    # tree_map keeps the structure and visits leaves in that order
    seen = []
    mapped = tu.tree_map(lambda v: seen.append(v) or f"leaf{v}", tree)
    assert seen == leaves
    assert mapped == jtu.tree_map(lambda v: f"leaf{v}", tree)
    assert tu.tree_structure(mapped) == treedef
    assert tu.tree_structure(tree) == treedef
    # unflatten with new leaves puts them where JAX puts them
    new = list(range(100, 100 + len(leaves)))
    assert tu.tree_unflatten(treedef, new) == jtu.tree_unflatten(jtreedef, new)


def test_none_is_an_empty_node_not_a_leaf():
    assert tu.tree_leaves([None, 1, None]) == [1]
    assert tu.tree_map(lambda v: v + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    assert tu.tree_leaves([None, 1], is_leaf=lambda v: v is None) == [None, 1]
    assert jtu.tree_leaves([None, 1], is_leaf=lambda v: v is None) == [None, 1]


def test_dict_keys_are_sorted_as_in_jax():
    tree = {"b": 1, "a": 2, "c": 3}
    assert tu.tree_leaves(tree) == [2, 1, 3] == jtu.tree_leaves(tree)
    back = tu.tree_unflatten(tu.tree_structure(tree), [20, 10, 30])
    assert back == {"a": 20, "b": 10, "c": 30}


def test_register_pytree_node_round_trip():
    tree = [Box(1, (2, 3), "outer"), {"k": Box(4, None)}]
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4] == jtu.tree_leaves(tree)
    assert tu.tree_unflatten(treedef, leaves) == tree
    doubled = tu.tree_map(lambda v: v * 2, tree)
    assert doubled == [Box(2, (4, 6), "outer"), {"k": Box(8, None)}]
    assert doubled == jtu.tree_map(lambda v: v * 2, tree)
    assert tu.tree_structure(Box(1, 2, "a")) != tu.tree_structure(Box(1, 2, "b"))  # aux matters


def test_register_pytree_node_class_round_trip():
    tree = (Pair(1, [2, 3], tag="t"), Pair(Pair(4, 5), None))
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert tu.tree_map(lambda v: -v, tree) == (
        Pair(-1, [-2, -3], tag="t"),
        Pair(Pair(-4, -5), None),
    )


def test_register_dataclass_round_trip():
    p = Params(w=np.ones(2), b=3.0, name="dense")
    leaves, treedef = tu.tree_flatten(p)
    assert len(leaves) == 2 and leaves[1] == 3.0
    np.testing.assert_array_equal(leaves[0], np.ones(2))
    back = tu.tree_unflatten(treedef, [10, 20])
    assert back == Params(w=10, b=20, name="dense")
    assert tu.tree_structure(Params(1, 2, "a")) != tu.tree_structure(Params(1, 2, "b"))
    e = Explicit(data=[1, 2], meta=7)
    assert tu.tree_leaves(e) == [1, 2]
    assert tu.tree_map(lambda v: v + 1, e) == Explicit(data=[2, 3], meta=7)
    # JAX's register_dataclass (at the top of this file) gives the same leaves
    assert jtu.tree_leaves(e) == tu.tree_leaves(e)


def test_tree_map_with_several_trees_and_is_leaf():
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    assert tu.tree_map(lambda u, v: u + v, a, b) == {"x": 11, "y": (22, 33)}
    assert tu.tree_map(lambda u, v: u + v, a, b) == jtu.tree_map(lambda u, v: u + v, a, b)
    with pytest.raises(ValueError):
        tu.tree_map(lambda u, v: u + v, a, {"x": 1})
    is_pair = lambda v: isinstance(v, tuple)  # noqa: E731
    assert tu.tree_leaves(a, is_leaf=is_pair) == jtu.tree_leaves(a, is_leaf=is_pair)
    assert tu.tree_map(len, a["y"], is_leaf=is_pair) == 2


def test_tree_reduce_all_and_children():
    tree = [1, (2, 3), {"a": 4}]
    assert (
        tu.tree_reduce(lambda u, v: u + v, tree) == 10 == jtu.tree_reduce(lambda u, v: u + v, tree)
    )
    assert tu.tree_reduce(lambda u, v: u + v, tree, 100) == 110
    assert tu.tree_reduce(lambda u, v: (u, v), [1], None) == (None, 1)  # None is an initializer
    assert jtu.tree_reduce(lambda u, v: (u, v), [1], None) == (None, 1)
    assert tu.tree_all([True, (1, 2)]) and not tu.tree_all([True, (1, 0)])
    kids = tu.treedef_children(tu.tree_structure((1, [2, 3])))
    assert [k.num_leaves for k in kids] == [1, 2]


def test_arrays_are_leaves_and_pytrees_flow_through_make_jaxpr():
    x = fnp.asarray(np.arange(3.0))
    tree = {"p": Params(w=x, b=np.float32(1)), "box": Box(x, x), "n": None, "pair": Pair(x, 2.0)}
    assert len(tu.tree_leaves(tree)) == 6

    def f(t):
        return tu.tree_map(lambda v: v * 2, t)

    closed = functx.make_jaxpr(f)(tree)
    assert len(closed.jaxpr.invars) == 6 and len(closed.jaxpr.outvars) == 6
    out = f(tree)
    assert isinstance(out["p"], Params) and out["p"].name == "layer"
    np.testing.assert_array_equal(np.asarray(out["box"].hi), np.arange(3.0) * 2)
    assert out["n"] is None


# --- key paths, Partial, register_pytree_with_keys, register_static (issue 18) -------------------
class Keyed:
    """Registered with keys in both libraries: children a and b under GetAttrKey names."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Keyed and (self.a, self.b) == (other.a, other.b)


def _keyed_flatten(mod):
    return lambda k: (((mod.GetAttrKey("a"), k.a), (mod.DictKey("bee"), k.b)), None)


tu.register_pytree_with_keys(Keyed, _keyed_flatten(tu), lambda _, c: Keyed(*c))
jtu.register_pytree_with_keys(Keyed, _keyed_flatten(jtu), lambda _, c: Keyed(*c))
jtu.register_dataclass(Params)


@dataclasses.dataclass(frozen=True)
class Static:
    tag: str


tu.register_static(Static)
jtu.register_static(Static)


@dataclasses.dataclass(frozen=True)
class DenseNode:
    """A dataclass registered with register_pytree_node_class: JAX's paths are flat indices."""

    w: Any
    b: Any

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)


tu.register_pytree_node_class(DenseNode)
jtu.register_pytree_node_class(DenseNode)

PATH_TREES = [
    *BUILTIN_TREES,
    [Box(1, (2, 3), "b"), {"k": Box(4, None)}],
    {"p": Params(w=1, b=[2, 3]), "e": Explicit(data=(4, 5), meta=1)},
    (Keyed(1, {"x": 2}), Keyed(None, [3])),
    [Static("s"), 1, {"q": Static("t")}],
    {"d": [DenseNode(1, (2, 3))], "e": DenseNode(4, 5)},
]


@pytest.mark.parametrize("tree", PATH_TREES, ids=tree_id)
def test_paths_print_as_jax(tree):
    pairs, treedef = tu.tree_flatten_with_path(tree)
    jpairs, jtreedef = jtu.tree_flatten_with_path(tree)
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert [jtu.keystr(p) for p, _ in pairs] == [tu.keystr(p) for p, _ in jpairs]
    for simple, sep in [(True, "/"), (False, ","), (True, "")]:
        assert [tu.keystr(p, simple=simple, separator=sep) for p, _ in pairs] == [
            jtu.keystr(p, simple=simple, separator=sep) for p, _ in jpairs
        ]
    assert [x for _, x in pairs] == [x for _, x in jpairs]
    assert treedef.num_leaves == jtreedef.num_leaves
    assert [repr(k) for p, _ in pairs for k in p] == [repr(k) for p, _ in jpairs for k in p]
    assert [(tu.keystr(p), x) for p, x in tu.tree_leaves_with_path(tree)] == [
        (jtu.keystr(p), x) for p, x in jtu.tree_leaves_with_path(tree)
    ]
    f = lambda p, x: (tu.keystr(p), x)  # noqa: E731
    jf = lambda p, x: (jtu.keystr(p), x)  # noqa: E731
    assert tu.tree_map_with_path(f, tree) == jtu.tree_map_with_path(jf, tree)
    assert tu.tree_map_with_path(lambda p, x, y: (len(p), x, y), tree, tree) == (
        jtu.tree_map_with_path(lambda p, x, y: (len(p), x, y), tree, tree)
    )


def test_is_leaf_takes_path_and_is_leaf():
    tree = {"a": [1, (2, None)], "n": None, "b": (3, Point(4, 5))}
    for pred in [lambda p, x: len(p) == 1, lambda p, x: isinstance(x, tuple) and len(p) > 1]:
        ours = tu.tree_leaves_with_path(tree, is_leaf=pred, is_leaf_takes_path=True)
        theirs = jtu.tree_leaves_with_path(tree, is_leaf=pred, is_leaf_takes_path=True)
        assert [(tu.keystr(p), x) for p, x in ours] == [(jtu.keystr(p), x) for p, x in theirs]
        f = lambda p, x: tu.keystr(p)  # noqa: E731
        assert tu.tree_map_with_path(
            f, tree, is_leaf=pred, is_leaf_takes_path=True
        ) == jtu.tree_map_with_path(f, tree, is_leaf=pred, is_leaf_takes_path=True)
        _, treedef = tu.tree_flatten_with_path(tree, is_leaf=pred, is_leaf_takes_path=True)
        assert treedef.num_leaves == len(theirs)
    is_tuple = lambda x: isinstance(x, tuple)  # noqa: E731
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree, is_leaf=is_tuple)] == [
        jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree, is_leaf=is_tuple)
    ]


def test_tree_map_with_path_mismatch_is_a_value_error():
    with pytest.raises(ValueError):
        jtu.tree_map_with_path(lambda p, x, y: x, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError):
        tu.tree_map_with_path(lambda p, x, y: x, {"a": 1}, {"b": 1})


def test_key_classes_as_jax():
    for name, arg in [
        ("SequenceKey", 3),
        ("DictKey", "k"),
        ("DictKey", 7),
        ("GetAttrKey", "w"),
        ("FlattenedIndexKey", 2),
    ]:
        ours, theirs = getattr(tu, name)(arg), getattr(jtu, name)(arg)
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
        assert tu.keystr((ours,), simple=True) == jtu.keystr((theirs,), simple=True)
        assert ours == getattr(tu, name)(arg) and hash(ours) == hash(getattr(tu, name)(arg))
        assert ours.__match_args__ == theirs.__match_args__
    assert tu.keystr(("x", 1), separator=".") == jtu.keystr(("x", 1), separator=".")


def test_partial_is_a_pytree_as_jax():
    def f(a, b, c=0.0):
        return a * b + c

    p, jp = tu.Partial(f, 2.0, c=1.0), jtu.Partial(f, 2.0, c=1.0)
    assert isinstance(p, __import__("functools").partial)
    assert p(3.0) == jp(3.0) == 7.0
    assert tu.tree_leaves(p) == jtu.tree_leaves(jp) == [2.0, 1.0]
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == [
        jtu.keystr(k) for k, _ in jtu.tree_leaves_with_path(jp)
    ]
    doubled = tu.tree_map(lambda v: v * 2, p)
    assert type(doubled) is tu.Partial and doubled(3.0) == jtu.tree_map(lambda v: v * 2, jp)(3.0)
    nested, jnested = tu.Partial(p, 5.0), jtu.Partial(jp, 5.0)  # the inner Partial is static
    assert tu.tree_leaves(nested) == jtu.tree_leaves(jnested) == [5.0]
    assert nested() == jnested() == 11.0
    # through jit and grad, as JAX
    x = fnp.asarray(np.float32(3.0))
    g = functx.jit(lambda q, y: q(y))(tu.Partial(fnp.multiply, x), x)
    assert float(g) == 9.0
    dq = functx.grad(lambda q: q(2.0))(tu.Partial(f, x, c=x))
    jdq = jax.grad(lambda q: q(2.0))(jtu.Partial(f, np.float32(3.0), c=np.float32(3.0)))
    assert type(dq) is tu.Partial
    assert [float(v) for v in tu.tree_leaves(dq)] == [float(v) for v in jtu.tree_leaves(jdq)]


def test_register_static_has_no_leaves():
    tree = [Static("s"), 1]
    assert tu.tree_leaves(tree) == jtu.tree_leaves(tree) == [1]
    assert tu.tree_structure([Static("a")]) != tu.tree_structure([Static("b")])
    assert tu.tree_map(lambda v: v + 1, tree) == [Static("s"), 2]
    out = functx.jit(lambda s, y: y * 2 if s.tag == "s" else y)(Static("s"), fnp.asarray(1.0))
    assert float(out) == 2.0


def test_registration_prints_no_optree_warnings(recwarn):
    class NT(NamedTuple):
        u: Any

    class Plain:
        pass

    tu.register_pytree_node(NT, lambda n: ((n.u,), None), lambda _, c: NT(*c))
    tu.register_pytree_node(Plain, lambda n: ((), None), lambda _, c: Plain())
    with pytest.raises(ValueError):
        jtu.register_pytree_node(Box, lambda b: ((), None), lambda _, c: None)
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(Plain, lambda n: ((), None), lambda _, c: Plain())
    with pytest.raises(ValueError):
        tu.register_pytree_with_keys(Keyed, _keyed_flatten(tu), lambda _, c: Keyed(*c))
    assert not [w for w in recwarn if "optree" in str(w.filename) or "PyTree" in str(w.message)]
    assert tu.tree_leaves(NT([1, 2])) == [1, 2]
    T = type("T", (), {})
    assert tu.register_pytree_node(T, lambda n: ((), None), lambda *_: T()) is T


def test_tree_transpose_and_tree_all_as_jax():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure({"x": 0, "y": (0, 0)})
    tree = [{"x": 1, "y": (2, 3)}, {"x": 4, "y": (5, 6)}]
    jouter, jinner = jtu.tree_structure([0, 0]), jtu.tree_structure({"x": 0, "y": (0, 0)})
    assert tu.tree_transpose(outer, inner, tree) == jtu.tree_transpose(jouter, jinner, tree)
    assert tu.tree_transpose(outer, None, tree) == jtu.tree_transpose(jouter, None, tree)
    bad = [{"x": 1, "y": (2, 3)}, {"x": 4, "y": (5,)}]
    with pytest.raises(TypeError):
        jtu.tree_transpose(jouter, jinner, bad)
    with pytest.raises(TypeError):
        tu.tree_transpose(outer, inner, bad)
    for t in [[], [1, (0,)], {"a": None}]:
        assert tu.tree_all(t) == jtu.tree_all(t)
    is_t = lambda x: isinstance(x, tuple)  # noqa: E731
    assert tu.tree_all([1, (0,)], is_leaf=is_t) == jtu.tree_all([1, (0,)], is_leaf=is_t)


@pytest.mark.usefixtures("no_x64")
def test_docstring_examples_run():
    for name in tu.__all__:
        if name in ("PyTreeDef",):
            continue
        # (the public names' examples run in tests/test_docstrings.py; the others here)
        assert docutil.run(getattr(tu, name), name, globs={}).failed == 0, name


def test_is_leaf_takes_path_rebuilds_nothing():
    calls = []

    class Checked:
        def __init__(self, v):
            self.v = v

    tu.register_pytree_node(
        Checked, lambda c: ((c.v,), None), lambda _, ch: calls.append(ch) or Checked(*ch)
    )
    tree = {"c": Checked([1, (2, 3)]), "d": [Checked(4)]}
    pred = lambda p, x: isinstance(x, tuple)  # noqa: E731
    pairs = tu.tree_leaves_with_path(tree, is_leaf=pred, is_leaf_takes_path=True)
    assert [tu.keystr(p) for p, _ in pairs] == [
        "['c'][<flat index 0>][0]",
        "['c'][<flat index 0>][1]",
        "['d'][0][<flat index 0>]",
    ]
    assert [x for _, x in pairs] == [1, (2, 3), 4] and calls == []


# --- flatten_one_level_with_keys, is_tree_node, default_registry (against JAX) ----------------
def _one_level_cases():
    pair = collections.namedtuple("pair", "x y")
    return [{"b": 1, "a": (2, 3)}, (1, [2]), [4, {"k": 5}], None, (), pair(1, 2)]


@pytest.mark.parametrize("i", range(6))
def test_flatten_one_level_with_keys_as_jax(i):
    tree = _one_level_cases()[i]
    got = tu.flatten_one_level_with_keys(tree)
    want = jax.tree_util.flatten_one_level_with_keys(tree)
    assert [c for _, c in got[0]] == [c for _, c in want[0]] and got[1] == want[1]
    if type(tree).__name__ != "pair":  # (JAX 0.10.2 keys a NamedTuple's children all by field 0)
        assert [str(k) for k, _ in got[0]] == [str(k) for k, _ in want[0]]
    else:
        assert [str(k) for k, _ in got[0]] == [".x", ".y"]
    assert type(got[0]) is type(want[0])
    for leaf in (1, "a", np.float32(2)):
        with pytest.raises(ValueError, match="can't tree-flatten"):
            tu.flatten_one_level_with_keys(leaf)


def test_is_tree_node_and_default_registry_as_jax():
    pair = collections.namedtuple("pair", "x y")

    @dataclasses.dataclass
    class Box:
        v: float

    tu.register_dataclass(Box, ["v"], [])
    jax.tree_util.register_dataclass(Box, ["v"], [])
    for typ in (tuple, list, dict, type(None), pair, Box, int, np.ndarray, (1,), "x"):
        assert tu.is_tree_node(typ) == jax.tree_util.is_tree_node(typ), typ
        assert tu.default_registry.is_node(typ) == jax.tree_util.default_registry.is_node(typ)
    ours, theirs = tu.default_registry, jax.tree_util.default_registry
    tree = {"a": [1, Box(2.0)], "b": None}
    assert ours.flatten(tree)[0] == theirs.flatten(tree)[0]
    assert ours.flatten_one_level(3) is None and theirs.flatten_one_level(3) is None
    assert ours.flatten_one_level(tree) == theirs.flatten_one_level(tree)
    assert ours.flatten_one_level_with_keys(7) is None
    paths = [(tu.keystr(p), x) for p, x in ours.flatten_with_path(tree)[0]]
    assert paths == [(jax.tree_util.keystr(p), x) for p, x in theirs.flatten_with_path(tree)[0]]
