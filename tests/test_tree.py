"""``functx.tree`` against ``jax.tree`` on the same trees: leaves, structure, map, reduce, all,
transpose and the key-path functions, with JAX's error classes."""

from __future__ import annotations

import operator
import re
from typing import Any, NamedTuple

import docutil
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import tree as ft, tree_util as tu


def tree_id(tree):
    """A test id: the repr without object addresses (the same in every pytest process)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(tree))


jax = pytest.importorskip("jax")
jt = jax.tree
jtu = jax.tree_util


class Pt(NamedTuple):
    x: Any
    y: Any


class Node:
    def __init__(self, kids, label):
        self.kids, self.label = kids, label

    def __eq__(self, other):
        return type(other) is Node and (self.kids, self.label) == (other.kids, other.label)

    def __repr__(self):
        return f"Node({self.kids!r}, {self.label!r})"


for _mod in (tu, jtu):
    _mod.register_pytree_node(Node, lambda n: ((n.kids,), n.label), lambda lab, c: Node(c[0], lab))

TREES = [
    0,
    None,
    [],
    (1, None, 2),
    {"b": [1, 2], "a": (3, {"c": 4})},
    Pt(1, [2, None]),
    [Node([1, 2], "n"), {"z": Node(3, "m")}],
    {"deep": [[[[1]]], (2,)], "e": {}},
]


@pytest.mark.parametrize("tree", TREES, ids=tree_id)
def test_leaves_structure_flatten_unflatten(tree):
    assert ft.leaves(tree) == jt.leaves(tree)
    leaves, treedef = ft.flatten(tree)
    jleaves, jtreedef = jt.flatten(tree)
    assert leaves == jleaves
    assert treedef.num_leaves == jtreedef.num_leaves and treedef.num_nodes == jtreedef.num_nodes
    assert ft.structure(tree) == treedef
    new = [f"v{i}" for i in range(len(leaves))]
    assert ft.unflatten(treedef, new) == jt.unflatten(jtreedef, new)
    assert ft.map(lambda v: v * 10, tree) == jt.map(lambda v: v * 10, tree)
    assert ft.map(operator.add, tree, tree) == jt.map(operator.add, tree, tree)
    assert ft.reduce(operator.add, tree, 0) == jt.reduce(operator.add, tree, 0)
    assert ft.all(tree) == jt.all(tree)
    pairs, treedef2 = ft.flatten_with_path(tree)
    jpairs, _ = jt.flatten_with_path(tree)
    assert [(jtu.keystr(p), x) for p, x in pairs] == [(jtu.keystr(p), x) for p, x in jpairs]
    assert treedef2 == treedef
    assert [(tu.keystr(p), x) for p, x in ft.leaves_with_path(tree)] == [
        (jtu.keystr(p), x) for p, x in jt.leaves_with_path(tree)
    ]
    assert ft.map_with_path(lambda p, v: (tu.keystr(p), v), tree) == jt.map_with_path(
        lambda p, v: (jtu.keystr(p), v), tree
    )


def test_is_leaf_everywhere():
    tree = {"a": (1, 2), "b": [(3,), 4]}
    is_t = lambda x: isinstance(x, tuple)  # noqa: E731
    assert ft.leaves(tree, is_t) == jt.leaves(tree, is_t)
    assert ft.flatten(tree, is_t)[0] == jt.flatten(tree, is_t)[0]
    assert ft.structure(tree, is_t).num_leaves == jt.structure(tree, is_t).num_leaves
    assert ft.map(repr, tree, is_leaf=is_t) == jt.map(repr, tree, is_leaf=is_t)
    assert ft.reduce(lambda a, b: a + [b], tree, [], is_t) == jt.reduce(
        lambda a, b: a + [b], tree, [], is_t
    )
    assert ft.all([(0,), 1], is_leaf=is_t) == jt.all([(0,), 1], is_leaf=is_t)
    pl = lambda p, x: len(p) == 2  # noqa: E731
    assert [tu.keystr(p) for p, _ in ft.leaves_with_path(tree, pl, True)] == [
        jtu.keystr(p) for p, _ in jt.leaves_with_path(tree, pl, True)
    ]
    assert ft.map_with_path(
        lambda p, x: repr(x), tree, is_leaf=pl, is_leaf_takes_path=True
    ) == jt.map_with_path(lambda p, x: repr(x), tree, is_leaf=pl, is_leaf_takes_path=True)


def test_transpose_as_jax():
    outer, jouter = ft.structure([0, 0, 0]), jt.structure([0, 0, 0])
    inner, jinner = ft.structure(Pt(0, 0)), jt.structure(Pt(0, 0))
    tree = [Pt(1, 2), Pt(3, 4), Pt(5, 6)]
    assert ft.transpose(outer, inner, tree) == jt.transpose(jouter, jinner, tree)
    assert ft.transpose(outer, None, tree) == jt.transpose(jouter, None, tree)


def test_errors_as_jax():
    td, jtd = ft.structure([0, 0]), jt.structure([0, 0])
    for mod, t in [(ft, td), (jt, jtd)]:
        with pytest.raises(ValueError):
            mod.unflatten(t, [1])
        with pytest.raises(TypeError):
            mod.reduce(operator.add, [])
        with pytest.raises(ValueError):
            mod.map(operator.add, [1, 2], [1])
        with pytest.raises(TypeError):
            mod.transpose(t, None, [(1, 2), (3,)])


def test_tree_functions_under_jit():
    tree = {"w": fnp.ones(3), "b": [fnp.zeros(2)]}
    out = functx.jit(lambda t: ft.map_with_path(lambda p, x: x + len(p), t))(tree)
    assert [float(x.sum()) for x in ft.leaves(out)] == [4.0, 6.0]


@pytest.mark.usefixtures("no_x64")
def test_all_names_and_docstring_examples():
    assert sorted(ft.__all__) == sorted(
        n
        for n in [
            "all",
            "flatten",
            "flatten_with_path",
            "leaves",
            "leaves_with_path",
            "map",
            "map_with_path",
            "reduce",
            "structure",
            "transpose",
            "unflatten",
            "broadcast",
            "reduce_associative",
            "static",
        ]
        if hasattr(jt, n)
    )
    assert functx.tree is ft
    for name in ft.__all__:
        # (the public names' examples run in tests/test_docstrings.py; the others here)
        assert docutil.run(getattr(ft, name), name, globs={}).failed == 0, name


@pytest.mark.parametrize("jit", [False, True])
def test_example_libraries_optimizers_runs_on_functx_trees(jit):
    """The installed JAX's optimizers.py (jax.tree.flatten/map/unflatten, a NamedTuple registered
    as a pytree), run with functx in place of jax: no optree warning, JAX's numbers."""
    import pathlib
    import types
    import warnings

    src = (pathlib.Path(jax.__file__).parent / "example_libraries" / "optimizers.py").read_text()
    src = src.replace("import jax\n", "import functx as jax\n")
    src = src.replace("import jax.numpy as jnp", "import functx.numpy as jnp")
    mod = types.ModuleType("functx_optimizers")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(src, "optimizers.py", "exec"), mod.__dict__)
    from jax.example_libraries import optimizers as jopt

    def run(opt, lib, np_mod):
        init, update, get = opt(1e-2)
        state = init({"w": np_mod.ones(3, "float32"), "b": [np_mod.zeros(2, "float32")]})

        def loss(p):
            return (p["w"] ** 3).sum() + ((p["b"][0] - 1.0) ** 2).sum()

        step = lambda i, s: update(i, lib.grad(loss)(get(s)), s)  # noqa: E731
        step = lib.jit(step) if jit else step
        for i in range(3):
            state = step(i, state)
        return get(state)

    ours = run(mod.adam, functx, fnp)
    theirs = run(jopt.adam, jax, jax.numpy)
    for a, b in zip(ft.leaves(ours), jt.leaves(theirs), strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_static_field_as_jax():
    import dataclasses

    import jax

    def make(m):
        @m.tree_util.register_dataclass
        @dataclasses.dataclass
        class Op:
            x: object
            op: str = m.tree.static(default="add", metadata={"doc": "the op"})

        return Op

    for m in (functx, jax):
        op = make(m)(1.0)
        leaves, treedef = m.tree.flatten(op)
        assert leaves == [1.0] and m.tree.unflatten(treedef, [2.0]).op == "add"
        (field,) = [f for f in dataclasses.fields(op) if f.name == "op"]
        assert dict(field.metadata) == {"static": True, "doc": "the op"}
