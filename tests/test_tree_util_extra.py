"""``functx.tree_util``'s treedef_is_leaf, treedef_tuple, all_leaves, flatten_one_level,
tree_broadcast, tree_reduce_associative and the KeyEntry/KeyPath aliases against
``jax.tree_util`` (pure Python on both sides: JAX is called directly)."""

from __future__ import annotations

import collections

import jax.tree_util as jtu
import pytest

import functx.tree_util as ftu

Point = collections.namedtuple("Point", "x y")
TREES = [1.0, None, (1, 2), [3], {"b": 1, "a": (2, [3])}, Point(1, (2,)), ((), [None, 4])]


def test_structure_predicates_and_one_level():
    for t in TREES:
        assert ftu.treedef_is_leaf(ftu.tree_structure(t)) == jtu.treedef_is_leaf(
            jtu.tree_structure(t)
        ), t
        assert ftu.all_leaves([t, 1]) == jtu.all_leaves([t, 1]), t
        leafy = lambda x: isinstance(x, tuple)  # noqa: E731
        assert ftu.all_leaves([t], is_leaf=leafy) == jtu.all_leaves([t], is_leaf=leafy), t
        if not jtu.treedef_is_leaf(jtu.tree_structure(t)) or t is None:
            assert ftu.flatten_one_level(t) == jtu.flatten_one_level(t), t
        else:
            with pytest.raises(ValueError, match="can't tree-flatten"):
                ftu.flatten_one_level(t)
    defs = [ftu.tree_structure(t) for t in TREES]
    want = jtu.treedef_tuple([jtu.tree_structure(t) for t in TREES])
    ours = ftu.treedef_tuple(defs)
    assert ours == ftu.tree_structure(tuple(TREES))
    assert (ours.num_leaves, ours.num_nodes) == (want.num_leaves, want.num_nodes)
    assert ftu.KeyPath == tuple[ftu.KeyEntry, ...]


def test_broadcast_and_associative_reduce():
    prefix, full = (1, {"a": 2}), ((3, 4), {"a": [5, 6]})
    assert ftu.tree_broadcast(prefix, full) == jtu.tree_broadcast(prefix, full)
    assert ftu.tree_broadcast(7, full) == jtu.tree_broadcast(7, full)
    with pytest.raises(ValueError):
        ftu.tree_broadcast((1, 2, 3), full)
    for t in TREES[2:]:
        strs = jtu.tree_map(str, t)
        assert ftu.tree_reduce_associative(lambda a, b: a + b, strs) == (
            jtu.tree_reduce_associative(lambda a, b: a + b, strs)
        )
    assert ftu.tree_reduce_associative(max, [], identity=-1) == -1
    with pytest.raises(TypeError, match="identity"):
        ftu.tree_reduce_associative(max, [None])


def test_jax_tree_names():
    import jax.tree as jt

    import functx.tree as ft

    prefix, full = [1, {"a": 2}], [(3, 4), {"a": [5, 6]}]
    assert ft.broadcast(prefix, full) == jt.broadcast(prefix, full)
    tree = {"x": "a", "y": ("b", "c")}
    assert ft.reduce_associative(lambda a, b: a + b, tree) == jt.reduce_associative(
        lambda a, b: a + b, tree
    )
