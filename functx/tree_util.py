"""``functx.tree_util``: pytrees with JAX's names, backed by optree.

Containers: tuples, lists, dicts, None, NamedTuples, ordered/default dicts, and classes registered
with ``register_pytree_node`` or ``register_dataclass``.
"""

from __future__ import annotations

import dataclasses
import functools

import optree

from functx.tracing import PYTREE_NAMESPACE

PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree, is_leaf=None):
    """Leaves (left to right) and the tree structure."""
    return optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False,
                               namespace=PYTREE_NAMESPACE)


def tree_unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree, is_leaf=None):
    return optree.tree_leaves(tree, is_leaf=is_leaf, none_is_leaf=False,
                              namespace=PYTREE_NAMESPACE)


def tree_structure(tree, is_leaf=None):
    return optree.tree_structure(tree, is_leaf=is_leaf, none_is_leaf=False,
                                 namespace=PYTREE_NAMESPACE)


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply ``f`` to the leaves of ``tree`` (and the matching leaves of ``rest``)."""
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False,
                           namespace=PYTREE_NAMESPACE)


_NO_INITIALIZER = object()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce`` over the leaves (``initializer`` may be any value, None included)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree):
    return all(tree_leaves(tree))


def treedef_children(treedef):
    return treedef.children()


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Register a container: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x`` (JAX's signatures)."""
    optree.register_pytree_node(nodetype, flatten_func,
                                lambda aux, children: unflatten_func(aux, children),
                                namespace=PYTREE_NAMESPACE)
    return nodetype


def register_pytree_node_class(cls):
    """Class decorator: the class defines ``tree_flatten`` and classmethod ``tree_unflatten``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass: ``data_fields`` are children, ``meta_fields`` static metadata.
    With no field lists, every field is data unless marked ``field(metadata={'static': True})``."""
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if data_fields is None:
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = list(data_fields), list(meta_fields or ())

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        kw = dict(zip(data_fields, children))
        kw.update(zip(meta_fields, meta))
        return nodetype(**kw)

    register_pytree_node(nodetype, flatten, unflatten)
    return nodetype


__all__ = ["PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
           "tree_map", "tree_reduce", "tree_all", "treedef_children", "register_pytree_node",
           "register_pytree_node_class", "register_dataclass"]
