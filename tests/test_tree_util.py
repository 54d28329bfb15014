"""``functx.tree_util`` round-trips, with jax.tree_util as the reference for the leaf order and
structure of the builtin containers."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import tree_util as tu

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


@pytest.mark.parametrize("tree", BUILTIN_TREES, ids=repr)
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
    # JAX's register_dataclass gives the same leaves
    jtu.register_dataclass(Explicit, ["data"], ["meta"])  # JAX's positional signature
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
