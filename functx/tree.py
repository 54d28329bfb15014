"""``functx.tree``: JAX's ``jax.tree`` names for the pytree functions of ``functx.tree_util``."""

from __future__ import annotations

import dataclasses

from functx import tree_util
from functx.errors import missing_name_hook as _missing_name_hook
from functx.tree_util import _NO_INITIALIZER


def map(f, tree, *rest, is_leaf=None):
    """Apply ``f`` to the leaves of ``tree`` (and the matching leaves of ``rest``).

    Arguments:
        f: a function of as many leaves as there are trees.
        tree: a pytree.
        *rest: pytrees with ``tree``'s structure (or with it as a prefix).
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A pytree of ``tree``'s structure holding ``f``'s results.

    Example:
        >>> import functx
        >>> functx.tree.map(lambda x, y: x + y, {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
        {'a': 11, 'b': [22]}
    """
    return tree_util.tree_map(f, tree, *rest, is_leaf=is_leaf)


def leaves(tree, is_leaf=None):
    """The leaves of ``tree``, left to right (dict keys sorted).

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A list of leaves.

    Example:
        >>> import functx
        >>> functx.tree.leaves({"b": (2, None), "a": 1})
        [1, 2]
    """
    return tree_util.tree_leaves(tree, is_leaf)


def structure(tree, is_leaf=None):
    """The structure (PyTreeDef) of ``tree``.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A PyTreeDef.

    Example:
        >>> import functx
        >>> functx.tree.structure([1, (2, 3)]).num_leaves
        3
    """
    return tree_util.tree_structure(tree, is_leaf)


def flatten(tree, is_leaf=None):
    """The leaves of ``tree`` and its structure.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        ``(leaves, treedef)``.

    Example:
        >>> import functx
        >>> leaves, treedef = functx.tree.flatten({"a": 1, "b": [2, 3]})
        >>> leaves, treedef.num_leaves
        ([1, 2, 3], 3)
    """
    return tree_util.tree_flatten(tree, is_leaf)


def unflatten(treedef, leaves):
    """The tree of structure ``treedef`` holding ``leaves``.

    Arguments:
        treedef: a PyTreeDef.
        leaves: an iterable of exactly ``treedef.num_leaves`` leaves.

    Returns:
        A pytree.

    Example:
        >>> import functx
        >>> treedef = functx.tree.structure({"a": 0, "b": [0, 0]})
        >>> functx.tree.unflatten(treedef, [1, 2, 3])
        {'a': 1, 'b': [2, 3]}
    """
    return tree_util.tree_unflatten(treedef, leaves)


def reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce`` of ``function`` over the leaves of ``tree``.

    Arguments:
        function: a function of the accumulated value and a leaf.
        tree: a pytree.
        initializer: optional first accumulated value.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        The reduced value.

    Example:
        >>> import operator, functx
        >>> functx.tree.reduce(operator.add, {"a": 1, "b": [2, 3]})
        6
    """
    return tree_util.tree_reduce(function, tree, initializer, is_leaf)


def all(tree, *, is_leaf=None):
    """Whether every leaf of ``tree`` is truthy.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A Python bool (True for a tree with no leaves).

    Example:
        >>> import functx
        >>> functx.tree.all({"a": True, "b": [1, 2]}), functx.tree.all([1, 0])
        (True, False)
    """
    return tree_util.tree_all(tree, is_leaf=is_leaf)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of structure ``outer(inner)`` into one of structure ``inner(outer)``.

    Arguments:
        outer_treedef: the outer structure.
        inner_treedef: the inner structure, or None to take the first outer leaf's.
        pytree_to_transpose: the tree to transpose.

    Returns:
        The transposed tree.

    Example:
        >>> import functx
        >>> outer = functx.tree.structure([0, 0])
        >>> inner = functx.tree.structure({"x": 0, "y": 0})
        >>> functx.tree.transpose(outer, inner, [{"x": 1, "y": 2}, {"x": 3, "y": 4}])
        {'x': [1, 3], 'y': [2, 4]}
    """
    return tree_util.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """Apply ``f(path, leaf, *rest_leaves)`` to every leaf of ``tree``.

    Arguments:
        f: a function of the key path, the leaf and the matching leaves of ``rest``.
        tree: a pytree.
        *rest: pytrees with ``tree``'s structure.
        is_leaf: optional predicate marking subtrees to treat as leaves.
        is_leaf_takes_path: whether ``is_leaf`` takes ``(path, x)``.

    Returns:
        A pytree of ``tree``'s structure holding ``f``'s results.

    Example:
        >>> import functx
        >>> functx.tree.map_with_path(lambda p, x: len(p) * x, {"a": [1, 2], "b": 3})
        {'a': [2, 4], 'b': 3}
    """
    return tree_util.tree_map_with_path(
        f, tree, *rest, is_leaf=is_leaf, is_leaf_takes_path=is_leaf_takes_path
    )


def leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """The leaves of ``tree`` with their key paths.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.
        is_leaf_takes_path: whether ``is_leaf`` takes ``(path, x)``.

    Returns:
        A list of ``(path, leaf)`` pairs.

    Example:
        >>> import functx
        >>> pairs = functx.tree.leaves_with_path([5, {"k": 6}])
        >>> [(functx.tree_util.keystr(p), x) for p, x in pairs]
        [('[0]', 5), ("[1]['k']", 6)]
    """
    return tree_util.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path)


def flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """The leaves of ``tree`` with their key paths, and its structure.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.
        is_leaf_takes_path: whether ``is_leaf`` takes ``(path, x)``.

    Returns:
        ``([(path, leaf), ...], treedef)``.

    Example:
        >>> import functx
        >>> pairs, treedef = functx.tree.flatten_with_path((1, None, 2))
        >>> [functx.tree_util.keystr(p) for p, _ in pairs], treedef.num_leaves
        (['[0]', '[2]'], 2)
    """
    return tree_util.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` with each leaf repeated over the subtree of ``full_tree`` it covers
    (``jax.tree.broadcast``; ``functx.tree_util.tree_broadcast``).

    Arguments:
        prefix_tree: a pytree whose structure is a prefix of ``full_tree``'s.
        full_tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A pytree of ``full_tree``'s structure.

    Example:
        >>> from functx import tree
        >>> tree.broadcast([1, 2], [(0, 0), [0]])
        [(1, 1), [2]]
    """
    return tree_util.tree_broadcast(prefix_tree, full_tree, is_leaf=is_leaf)


def reduce_associative(operation, tree, *, identity=tree_util._UNSPECIFIED, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` in a balanced tree
    (``jax.tree.reduce_associative``; ``functx.tree_util.tree_reduce_associative``).

    Arguments:
        operation: an associative function of two values.
        tree: a pytree.
        identity: the result for a tree with no leaves (required then).
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        The reduced value.

    Example:
        >>> from functx import tree
        >>> tree.reduce_associative(lambda a, b: a * b, {"x": 2, "y": (3, 4)})
        24
    """
    return tree_util.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def static(**kwargs):
    """A dataclass field that ``tree_util.register_dataclass`` keeps as static metadata, not a
    child (``jax.tree.static``): ``dataclasses.field(**kwargs)`` with ``"static": True`` added to
    its ``metadata``.

    Arguments:
        **kwargs: as for ``dataclasses.field`` (``default``, ``metadata``, ...).

    Returns:
        the field.

    Example:
        >>> import dataclasses, functx
        >>> @functx.tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Op:
        ...     x: float
        ...     op: str = functx.tree.static(default="add")
        >>> functx.tree.flatten(Op(1.0))
        ([1.0], PyTreeSpec(CustomTreeNode(Op[('add',)], [*]), namespace='functx'))
    """
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
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
