"""``functx.tree_util``: pytrees with JAX's names, backed by optree.

Containers: tuples, lists, dicts, None, NamedTuples, ordered/default dicts, and classes registered
with ``register_pytree_node`` or ``register_dataclass``.
"""

from __future__ import annotations

import dataclasses
import functools

import optree

from functx.errors import FunctxError, FunctxTypeError, FunctxValueError
from functx.source_info import where
from functx.tracing import PYTREE_NAMESPACE

PyTreeDef = optree.PyTreeSpec


def _check_callable(op, what, f, optional=False):
    if (f is None and optional) or callable(f):
        return
    raise FunctxTypeError(
        f"{op}: {what} must be callable{' or None' if optional else ''}, got "
        f"{f!r:.60} of type {type(f).__name__}{where()}"
    )


def _check_treedef(op, treedef):
    if not isinstance(treedef, PyTreeDef):
        raise FunctxTypeError(
            f"{op}: expected a PyTreeDef (from tree_structure or tree_flatten), "
            f"got {type(treedef).__name__}{where()}"
        )


def _call_optree(op, fn, *args, is_leaf=None, **kw):
    """``fn(*args, is_leaf=is_leaf, ...)``; an ``is_leaf`` that returns something optree cannot
    use (not a bool) is a FunctxTypeError rather than optree's internal error."""
    if is_leaf is None:
        return fn(*args, is_leaf=None, **kw)
    try:
        return fn(*args, is_leaf=is_leaf, **kw)
    except (TypeError, RuntimeError) as e:
        if isinstance(e, FunctxError):
            raise
        raise FunctxTypeError(f"{op}: is_leaf failed or returned a non-bool ({e}){where()}") from e


def tree_flatten(tree, is_leaf=None):
    """Leaves (left to right) and the tree structure."""
    _check_callable("tree_flatten", "is_leaf", is_leaf, optional=True)
    return _call_optree(
        "tree_flatten",
        optree.tree_flatten,
        tree,
        is_leaf=is_leaf,
        none_is_leaf=False,
        namespace=PYTREE_NAMESPACE,
    )


def tree_unflatten(treedef, leaves):
    """The tree of structure ``treedef`` with ``leaves`` (exactly ``treedef.num_leaves``)."""
    _check_treedef("tree_unflatten", treedef)
    try:
        leaves = list(leaves)
    except TypeError:
        raise FunctxTypeError(
            f"tree_unflatten: leaves must be an iterable, got {type(leaves).__name__}{where()}"
        ) from None
    if len(leaves) != treedef.num_leaves:
        raise FunctxValueError(
            f"tree_unflatten: {treedef} needs {treedef.num_leaves} leaves, got "
            f"{len(leaves)}{where()}"
        )
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree, is_leaf=None):
    _check_callable("tree_leaves", "is_leaf", is_leaf, optional=True)
    return _call_optree(
        "tree_leaves",
        optree.tree_leaves,
        tree,
        is_leaf=is_leaf,
        none_is_leaf=False,
        namespace=PYTREE_NAMESPACE,
    )


def tree_structure(tree, is_leaf=None):
    _check_callable("tree_structure", "is_leaf", is_leaf, optional=True)
    return _call_optree(
        "tree_structure",
        optree.tree_structure,
        tree,
        is_leaf=is_leaf,
        none_is_leaf=False,
        namespace=PYTREE_NAMESPACE,
    )


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply ``f`` to the leaves of ``tree`` (and the matching leaves of ``rest``)."""
    _check_callable("tree_map", "f", f)
    _check_callable("tree_map", "is_leaf", is_leaf, optional=True)
    treedef = tree_structure(tree, is_leaf)  # (checks is_leaf)
    if rest:
        for i, r in enumerate(rest):
            try:
                treedef.flatten_up_to(r)
            except (ValueError, TypeError) as e:
                raise FunctxValueError(
                    f"tree_map: tree {i + 1} of rest does not have the "
                    f"structure of the first tree, {treedef}: {e}{where()}"
                ) from None
    return optree.tree_map(
        f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )


_NO_INITIALIZER = object()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce`` over the leaves (``initializer`` may be any value, None included)."""
    _check_callable("tree_reduce", "function", function)
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise FunctxTypeError(
                f"tree_reduce of a tree with no leaves needs an initializer{where()}"
            )
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree):
    return all(tree_leaves(tree))


def treedef_children(treedef):
    _check_treedef("treedef_children", treedef)
    return treedef.children()


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Register a container: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x`` (JAX's signatures)."""
    if not isinstance(nodetype, type):
        raise FunctxTypeError(
            f"register_pytree_node: nodetype must be a class, got {nodetype!r:.60}{where()}"
        )
    _check_callable("register_pytree_node", "flatten_func", flatten_func)
    _check_callable("register_pytree_node", "unflatten_func", unflatten_func)
    try:
        optree.register_pytree_node(
            nodetype,
            flatten_func,
            lambda aux, children: unflatten_func(aux, children),
            namespace=PYTREE_NAMESPACE,
        )
    except ValueError as e:  # registered twice, or a built-in container
        raise FunctxValueError(
            f"register_pytree_node: cannot register {nodetype.__name__}: {e}{where()}"
        ) from None
    return nodetype


def register_pytree_node_class(cls):
    """Class decorator: the class defines ``tree_flatten`` and classmethod ``tree_unflatten``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass: ``data_fields`` are children, ``meta_fields`` static metadata.
    With no field lists, every field is data unless marked ``field(metadata={'static': True})``."""
    if nodetype is None:
        return functools.partial(
            register_dataclass,
            data_fields=data_fields,
            meta_fields=meta_fields,
            drop_fields=drop_fields,
        )
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


__all__ = [
    "PyTreeDef",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_reduce",
    "tree_all",
    "treedef_children",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_dataclass",
]
