"""``functx.tree_util``: pytrees with JAX's names, backed by optree.

Containers: tuples, lists, dicts, None, NamedTuples, ordered/default dicts, and classes registered
with ``register_pytree_node`` or ``register_dataclass``.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
import warnings

import optree

from functx.errors import (
    FunctxError,
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
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
    """The leaves of a pytree, left to right, and its structure (``jax.tree_util.tree_flatten``).

    Arguments:
      tree: a pytree (tuples, lists, dicts, None, namedtuples, registered nodes; anything else is
        a leaf).
      is_leaf: None or a predicate; a subtree for which it is True is a leaf.
    Returns:
      ``(leaves, treedef)``: a list of leaves and a ``PyTreeDef``.
    Example:
      >>> from functx import tree_util
      >>> leaves, treedef = tree_util.tree_flatten({"a": 1, "b": (2, None, [3])})
      >>> leaves, treedef.num_leaves
      ([1, 2, 3], 3)
    """
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
    """The pytree of structure ``treedef`` with ``leaves`` (``jax.tree_util.tree_unflatten``).

    Arguments:
      treedef: a ``PyTreeDef`` (from ``tree_flatten`` or ``tree_structure``).
      leaves: an iterable of exactly ``treedef.num_leaves`` values.
    Returns:
      A pytree.
    Example:
      >>> from functx import tree_util
      >>> treedef = tree_util.tree_structure((0, {"x": 0}))
      >>> tree_util.tree_unflatten(treedef, [1.5, 2.5])
      (1.5, {'x': 2.5})
    """
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
    """The leaves of a pytree, left to right (``jax.tree_util.tree_leaves``).

    Arguments:
      tree: a pytree.
      is_leaf: None or a predicate; a subtree for which it is True is a leaf.
    Returns:
      A list.
    Example:
      >>> from functx import tree_util
      >>> tree_util.tree_leaves([1, (2, None), {"z": 3, "a": 4}])
      [1, 2, 4, 3]
    """
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
    """The structure of a pytree without its leaves (``jax.tree_util.tree_structure``).

    Arguments:
      tree: a pytree.
      is_leaf: None or a predicate; a subtree for which it is True is a leaf.
    Returns:
      A ``PyTreeDef``.
    Example:
      >>> from functx import tree_util
      >>> tree_util.tree_structure((1, [2, 3])).num_leaves
      3
    """
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
    """Apply ``f`` to the leaves of ``tree`` and the matching leaves of ``rest``
    (``jax.tree_util.tree_map``).

    Arguments:
      f: a function of ``1 + len(rest)`` leaves.
      tree: a pytree; its structure is the result's.
      *rest: pytrees with ``tree``'s structure (or with ``tree``'s leaves as subtrees).
      is_leaf: None or a predicate; a subtree for which it is True is a leaf.
    Returns:
      A pytree of ``tree``'s structure holding ``f``'s results.
    Example:
      >>> from functx import tree_util
      >>> tree_util.tree_map(lambda a, b: a + b, {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)})
      {'x': 11, 'y': (22, 33)}
    """
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
    """``functools.reduce`` of ``function`` over the leaves of ``tree``
    (``jax.tree_util.tree_reduce``).

    Arguments:
      function: a function of two values.
      tree: a pytree.
      initializer: the start value (any value, None included); without it the first leaf.
      is_leaf: None or a predicate; a subtree for which it is True is a leaf.
    Returns:
      The reduced value.
    Example:
      >>> from functx import tree_util
      >>> tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)], 100)
      106
    """
    _check_callable("tree_reduce", "function", function)
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise FunctxTypeError(
                f"tree_reduce of a tree with no leaves needs an initializer{where()}"
            )
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
    """Whether every leaf of ``tree`` is truthy (True for a tree with no leaves).

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A Python bool.

    Example:
        >>> from functx import tree_util
        >>> tree_util.tree_all([True, {"a": 1}]), tree_util.tree_all([0, None])
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def treedef_children(treedef):
    """The structures of the children of ``treedef``'s root node
    (``jax.tree_util.treedef_children``).

    Arguments:
      treedef: a ``PyTreeDef``.
    Returns:
      A list of ``PyTreeDef``, one per child.
    Example:
      >>> from functx import tree_util
      >>> [c.num_leaves for c in tree_util.treedef_children(tree_util.tree_structure((1, [2, 3])))]
      [1, 2]
    """
    _check_treedef("treedef_children", treedef)
    return treedef.children()


def _register(op, nodetype, flatten, unflatten, path_entry_type=optree.FlattenedEntry):
    """Register ``nodetype`` in functx's namespace; optree's warning that a NamedTuple subclass
    overrides the global registration is not shown (JAX shows none). Children without keys get
    flat-index paths whatever the class is (optree's default would name a dataclass's or a
    NamedTuple's children by field, JAX does not)."""
    if not isinstance(nodetype, type):
        raise FunctxTypeError(f"{op}: nodetype must be a class, got {nodetype!r:.60}{where()}")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=r"PyTree type .* is a subclass of", category=UserWarning
            )
            optree.register_pytree_node(
                nodetype,
                flatten,
                unflatten,
                namespace=PYTREE_NAMESPACE,
                path_entry_type=path_entry_type,
            )
    except ValueError as e:  # registered twice, or a built-in container
        raise FunctxValueError(
            f"Duplicate custom PyTreeDef type registration for {nodetype}: {op}: {e}{where()}"
        ) from None
    return nodetype


def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """Register a container: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x`` (JAX's signatures).

    Arguments:
        nodetype: the class to register.
        flatten_func: ``x -> (children, aux_data)``.
        unflatten_func: ``(aux_data, children) -> x``.
        flatten_with_keys_func: optional ``x -> (((key, child), ...), aux_data)``; without it the
            children's key paths are ``FlattenedIndexKey``s.

    Returns:
        ``nodetype`` (JAX returns None; returning the class lets this decorate it).

    Example:
        >>> from functx import tree_util
        >>> class Pt:
        ...     def __init__(self, x, y):
        ...         self.x, self.y = x, y
        >>> _ = tree_util.register_pytree_node(
        ...     Pt, lambda p: ((p.x, p.y), None), lambda _, c: Pt(*c))
        >>> tree_util.tree_leaves(Pt(1, 2))
        [1, 2]
    """
    _check_callable("register_pytree_node", "flatten_func", flatten_func)
    _check_callable("register_pytree_node", "unflatten_func", unflatten_func)
    if flatten_with_keys_func is not None:
        register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func, flatten_func)
        return nodetype
    return _register(
        "register_pytree_node",
        nodetype,
        flatten_func,
        lambda aux, children: unflatten_func(aux, children),
    )


def register_pytree_node_class(cls):
    """Class decorator registering ``cls`` as a pytree node
    (``jax.tree_util.register_pytree_node_class``):
    the class defines a method ``tree_flatten() -> (children, aux_data)`` and a classmethod
    ``tree_unflatten(aux_data, children)``.

    Arguments:
      cls: the class.
    Returns:
      ``cls``, registered.
    Example:
      >>> from functx import tree_util
      >>> @tree_util.register_pytree_node_class
      ... class Pair:
      ...     def __init__(self, a, b):
      ...         self.a, self.b = a, b
      ...     def tree_flatten(self):
      ...         return (self.a, self.b), None
      ...     @classmethod
      ...     def tree_unflatten(cls, aux, children):
      ...         return cls(*children)
      >>> tree_util.tree_leaves(Pair(1, (2, 3)))
      [1, 2, 3]
    """
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass as a pytree node (``jax.tree_util.register_dataclass``):
    ``data_fields`` are children, ``meta_fields`` static metadata. With no field lists, every field
    is data unless marked ``field(metadata={'static': True})``.

    Arguments:
      nodetype: the dataclass (None: return a decorator).
      data_fields: the names of the fields that are children.
      meta_fields: the names of the fields that are static metadata (part of the treedef).
      drop_fields: the names of fields left out of both.
    Returns:
      ``nodetype``, registered (or a decorator when ``nodetype`` is None).
    Example:
      >>> import dataclasses
      >>> from functx import tree_util
      >>> @tree_util.register_dataclass
      ... @dataclasses.dataclass
      ... class Point:
      ...     x: float
      ...     y: float
      ...     name: str = dataclasses.field(default="p", metadata={"static": True})
      >>> tree_util.tree_leaves(Point(1.0, 2.0))
      [1.0, 2.0]
    """
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

    keys = tuple(GetAttrKey(n) for n in data_fields)

    def flatten(x):
        meta = tuple(getattr(x, n) for n in meta_fields)
        return [getattr(x, n) for n in data_fields], meta, keys

    def unflatten(meta, children):
        kw = dict(zip(data_fields, children))
        kw.update(zip(meta_fields, meta))
        return nodetype(**kw)

    _register("register_dataclass", nodetype, flatten, unflatten, _KeyEntry)
    return nodetype


# --- key paths -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key of a list or tuple child: prints as ``[idx]``.

    Arguments:
        idx: the child's index.

    Returns:
        A key path entry.

    Example:
        >>> from functx import tree_util
        >>> print(tree_util.SequenceKey(1))
        [1]
    """

    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a dict child: prints as ``['key']``.

    Arguments:
        key: the dict key.

    Returns:
        A key path entry.

    Example:
        >>> from functx import tree_util
        >>> print(tree_util.DictKey("a"))
        ['a']
    """

    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key of an attribute child (NamedTuple fields, dataclass fields): prints as ``.name``.

    Arguments:
        name: the attribute name.

    Returns:
        A key path entry.

    Example:
        >>> from functx import tree_util
        >>> print(tree_util.GetAttrKey("x"))
        .x
    """

    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key of a child of a node registered without keys: its index among the children.

    Arguments:
        key: the child's index in the flattened children.

    Returns:
        A key path entry.

    Example:
        >>> from functx import tree_util
        >>> print(tree_util.FlattenedIndexKey(0))
        [<flat index 0>]
    """

    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple=False, separator=""):
    """Print a key path (as ``tree_flatten_with_path`` gives it).

    Arguments:
        keys: a tuple of key entries (or anything with a ``str``).
        simple: print ``0``, ``a``, ``x`` rather than ``[0]``, ``['a']``, ``.x``.
        separator: the string between entries.

    Returns:
        A string.

    Example:
        >>> from functx import tree_util
        >>> [(p, _)] = tree_util.tree_leaves_with_path({"a": [1]})
        >>> tree_util.keystr(p), tree_util.keystr(p, simple=True, separator="/")
        ("['a'][0]", 'a/0')
    """
    return separator.join(_simple_str(k) if simple else str(k) for k in keys)


def _simple_str(k):
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, (DictKey, FlattenedIndexKey)):
        return str(k.key)
    if isinstance(k, GetAttrKey):
        return str(k.name)
    return str(k)


class _KeyEntry(optree.PyTreeEntry):
    """An optree path entry whose ``entry`` is a JAX-style key (for nodes registered with keys)."""

    def __call__(self, obj):
        children, _, entries, _ = optree.tree_flatten_one_level(
            obj, none_is_leaf=False, namespace=PYTREE_NAMESPACE
        )
        return children[list(entries).index(self.entry)]

    def codify(self, node=""):
        return f"{node}{self.entry}"


def _key_of(e):
    """The JAX key of one optree path entry."""
    if isinstance(e, _KeyEntry):
        return e.entry
    if isinstance(e, (optree.NamedTupleEntry, optree.StructSequenceEntry, optree.DataclassEntry)):
        return GetAttrKey(e.field)
    if isinstance(e, optree.SequenceEntry):
        return SequenceKey(e.entry)
    if isinstance(e, optree.MappingEntry):
        return DictKey(e.entry)
    return FlattenedIndexKey(e.entry)


def _decide(tree, is_leaf, path, decisions):
    """Call ``is_leaf(path, x)`` on every subtree, in the pre-order optree visits them (stopping
    below a subtree judged a leaf); append each answer to ``decisions``."""
    stop = bool(is_leaf(path, tree))
    decisions.append(stop)
    if stop or tree is None:
        return
    accessors, children, spec = optree.tree_flatten_with_accessor(
        tree, lambda x: x is not tree, none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )
    if spec.is_leaf():
        return
    for a, c in zip(accessors, children, strict=True):
        _decide(c, is_leaf, (*path, _key_of(a[0])), decisions)


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """Like ``tree_flatten``, with each leaf's key path.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves: ``is_leaf(x)``, or
            ``is_leaf(path, x)`` with ``is_leaf_takes_path=True``.
        is_leaf_takes_path: whether ``is_leaf`` takes the key path first.

    Returns:
        ``([(path, leaf), ...], treedef)``; a path is a tuple of ``SequenceKey``, ``DictKey``,
        ``GetAttrKey`` and ``FlattenedIndexKey`` entries.

    Example:
        >>> from functx import tree_util
        >>> pairs, _ = tree_util.tree_flatten_with_path({"w": (1, 2)})
        >>> [(tree_util.keystr(p), x) for p, x in pairs]
        [("['w'][0]", 1), ("['w'][1]", 2)]
    """
    _check_callable("tree_flatten_with_path", "is_leaf", is_leaf, optional=True)
    if is_leaf is not None and is_leaf_takes_path:
        # optree's is_leaf sees no path: ask is_leaf(path, x) first, in optree's visiting order,
        # then replay the answers (no node is rebuilt, so no user unflatten runs)
        decisions = []
        _decide(tree, is_leaf, (), decisions)
        answers = iter(decisions)
        is_leaf = lambda x: next(answers)  # noqa: E731
    accessors, leaves, treedef = _call_optree(
        "tree_flatten_with_path",
        optree.tree_flatten_with_accessor,
        tree,
        is_leaf=is_leaf,
        none_is_leaf=False,
        namespace=PYTREE_NAMESPACE,
    )
    if is_leaf_takes_path and is_leaf is not None and next(answers, None) is not None:
        raise FunctxError("tree_flatten_with_path: optree visited fewer nodes than expected")
    pairs = [(tuple(_key_of(e) for e in a), x) for a, x in zip(accessors, leaves, strict=True)]
    return pairs, treedef


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """The leaves of ``tree`` with their key paths.

    Arguments:
        tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.
        is_leaf_takes_path: whether ``is_leaf`` takes ``(path, x)``.

    Returns:
        A list of ``(path, leaf)`` pairs, left to right.

    Example:
        >>> from functx import tree_util
        >>> tree_util.tree_leaves_with_path([1, {"b": 2}])
        [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='b')), 2)]
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def _flatten_rest(op, treedef, rest):
    out = []
    for i, r in enumerate(rest):
        try:
            out.append(treedef.flatten_up_to(r))
        except (ValueError, TypeError) as e:
            raise FunctxValueError(
                f"{op}: tree {i + 1} of rest does not have the structure of the first tree, "
                f"{treedef}: {e}{where()}"
            ) from None
    return out


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """Apply ``f(path, leaf, *rest_leaves)`` to every leaf of ``tree``.

    Arguments:
        f: a function of the key path, the leaf and the matching leaves of ``rest``.
        tree: a pytree.
        *rest: pytrees with ``tree``'s structure (or with it as a prefix).
        is_leaf: optional predicate marking subtrees to treat as leaves.
        is_leaf_takes_path: whether ``is_leaf`` takes ``(path, x)``.

    Returns:
        A pytree of ``tree``'s structure holding ``f``'s results.

    Example:
        >>> from functx import tree_util
        >>> tree_util.tree_map_with_path(lambda p, x: tree_util.keystr(p) + str(x), {"a": [1]})
        {'a': ["['a'][0]1"]}
    """
    _check_callable("tree_map_with_path", "f", f)
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _flatten_rest("tree_map_with_path", treedef, rest)
    outs = [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others, strict=True)]
    return optree.tree_unflatten(treedef, outs)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of structure ``outer(inner)`` into one of structure ``inner(outer)``.

    Arguments:
        outer_treedef: the outer structure.
        inner_treedef: the inner structure, or None to take the first outer leaf's.
        pytree_to_transpose: the tree to transpose.

    Returns:
        The transposed tree.

    Example:
        >>> from functx import tree_util
        >>> outer = tree_util.tree_structure([0, 0])
        >>> tree_util.tree_transpose(outer, None, [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    _check_treedef("tree_transpose", outer_treedef)
    try:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
    except (ValueError, TypeError) as e:
        raise FunctxTypeError(f"tree_transpose: {e}{where()}") from None
    if inner_treedef is None:
        inner_treedef = tree_structure(subtrees[0]) if subtrees else tree_structure(None)
    _check_treedef("tree_transpose", inner_treedef)
    rows = []
    for sub in subtrees:
        if tree_structure(sub) != inner_treedef:
            raise FunctxTypeError(
                f"tree_transpose: Mismatch\n{tree_structure(sub)}\n != \n{inner_treedef}{where()}"
            )
        rows.append(tree_leaves(sub))
    cols = [optree.tree_unflatten(outer_treedef, list(c)) for c in zip(*rows, strict=True)]
    if not rows:
        cols = [optree.tree_unflatten(outer_treedef, [])] * inner_treedef.num_leaves
    return optree.tree_unflatten(inner_treedef, cols)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register a container whose children have key paths.

    Arguments:
        nodetype: the class to register.
        flatten_with_keys: ``x -> (((key, child), ...), aux_data)``.
        unflatten_func: ``(aux_data, children) -> x``.
        flatten_func: optional ``x -> (children, aux_data)`` (accepted as JAX does; the keyed
            flatten gives the same children).

    Returns:
        None (as JAX).

    Example:
        >>> from functx import tree_util
        >>> class Pt:
        ...     def __init__(self, x, y):
        ...         self.x, self.y = x, y
        >>> K = tree_util.GetAttrKey
        >>> tree_util.register_pytree_with_keys(
        ...     Pt, lambda p: (((K("x"), p.x), (K("y"), p.y)), None), lambda _, c: Pt(*c))
        >>> [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path(Pt(1, 2))]
        ['.x', '.y']
    """
    _check_callable("register_pytree_with_keys", "flatten_with_keys", flatten_with_keys)
    _check_callable("register_pytree_with_keys", "unflatten_func", unflatten_func)
    _check_callable("register_pytree_with_keys", "flatten_func", flatten_func, optional=True)

    def flatten(x):
        keyed, aux = flatten_with_keys(x)
        keyed = list(keyed)
        return [c for _, c in keyed], aux, tuple(k for k, _ in keyed)

    _register(
        "register_pytree_with_keys",
        nodetype,
        flatten,
        lambda aux, children: unflatten_func(aux, children),
        _KeyEntry,
    )


def register_pytree_with_keys_class(cls):
    """Class decorator: the class defines ``tree_flatten_with_keys`` and classmethod
    ``tree_unflatten``.

    Arguments:
        cls: the class.

    Returns:
        ``cls``.

    Example:
        >>> from functx import tree_util
        >>> @tree_util.register_pytree_with_keys_class
        ... class V:
        ...     def __init__(self, a):
        ...         self.a = a
        ...     def tree_flatten_with_keys(self):
        ...         return ((tree_util.GetAttrKey("a"), self.a),), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children):
        ...         return cls(*children)
        >>> tree_util.keystr(tree_util.tree_leaves_with_path(V(3))[0][0])
        '.a'
    """
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten)
    return cls


def register_static(cls):
    """Register ``cls`` as a pytree with no leaves: its instances are static structure.

    Arguments:
        cls: a hashable class.

    Returns:
        ``cls`` (so it works as a decorator).

    Example:
        >>> from functx import tree_util
        >>> @tree_util.register_static
        ... class Tag(str):
        ...     pass
        >>> tree_util.tree_leaves([1, Tag("t")])
        [1]
    """
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
    return cls


class _HashableCallable:
    """A Partial used as another Partial's function: part of the static structure."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __eq__(self, other):
        return isinstance(other, _HashableCallable) and self.fun is other.fun

    def __hash__(self):
        return id(self.fun)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: the bound arguments are its leaves, the function
    its static structure, so it can be passed to and returned from transformed functions.

    Arguments:
        func: the function.
        *args: positional arguments to bind (pytrees).
        **kw: keyword arguments to bind (pytrees).

    Returns:
        A callable pytree.

    Example:
        >>> import functx
        >>> from functx import tree_util
        >>> add = tree_util.Partial(lambda a, b: a + b, 1.0)
        >>> tree_util.tree_leaves(add), add(2.0)
        ([1.0], 3.0)
    """

    def __new__(klass, func, *args, **kw):
        if isinstance(func, functools.partial):
            func = _HashableCallable(func)  # functools.partial would merge it: keep it static
        return super().__new__(klass, func, *args, **kw)


register_pytree_with_keys(
    Partial,
    lambda p: (
        ((FlattenedIndexKey(0), p.args), (FlattenedIndexKey(1), p.keywords)),
        p.func,
    ),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)


# --- leaves, one-level flattening, prefix broadcasting, associative reduction ------------------

KeyEntry = typing.TypeVar("KeyEntry", bound=typing.Any)
KeyPath = tuple[KeyEntry, ...]


def treedef_is_leaf(treedef):
    """Whether ``treedef`` is the structure of a single node with no children (a leaf, or
    ``None``, as in JAX).

    Arguments:
        treedef: a PyTreeDef.

    Returns:
        A Python bool.

    Example:
        >>> from functx import tree_util
        >>> tree_util.treedef_is_leaf(tree_util.tree_structure(1.0))
        True
        >>> tree_util.treedef_is_leaf(tree_util.tree_structure((1.0,)))
        False
    """
    _check_treedef("treedef_is_leaf", treedef)
    return treedef.num_nodes == 1


def treedef_tuple(treedefs):
    """The structure of a tuple whose children have the structures ``treedefs``.

    Arguments:
        treedefs: an iterable of PyTreeDefs.

    Returns:
        A PyTreeDef.

    Example:
        >>> from functx import tree_util
        >>> s = tree_util.tree_structure
        >>> tree_util.treedef_tuple([s((1, 2)), s(None)]) == s(((1, 2), None))
        True
    """
    treedefs = list(treedefs)
    for t in treedefs:
        _check_treedef("treedef_tuple", t)
    return optree.treespec_tuple(treedefs, none_is_leaf=False, namespace=PYTREE_NAMESPACE)


def all_leaves(iterable, is_leaf=None):
    """Whether every item of ``iterable`` is a leaf (``None`` is not: it is an empty node).

    Arguments:
        iterable: the items.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A Python bool.

    Example:
        >>> from functx import tree_util
        >>> tree_util.all_leaves([1, 2.0]), tree_util.all_leaves([1, (2,)])
        (True, False)
    """
    items = list(iterable)
    if is_leaf is None:
        return all(treedef_is_leaf(tree_structure(x)) and x is not None for x in items)
    return items == tree_leaves(items, is_leaf)


def flatten_one_level(tree):
    """The children of ``tree``'s root node and its metadata (the sorted keys of a dict, the
    class of a NamedTuple, None for tuples and lists).

    Arguments:
        tree: a pytree whose root is a container (not a leaf).

    Returns:
        ``(children, metadata)``.

    Example:
        >>> from functx import tree_util
        >>> tree_util.flatten_one_level({"b": 1, "a": (2, 3)})
        (((2, 3), 1), ('a', 'b'))
    """
    if not is_tree_node(type(tree)):  # (an empty tuple is a node without leaves)
        raise FunctxValueError(f"can't tree-flatten type: {type(tree)}")
    children, meta, *_ = optree.tree_flatten_one_level(
        tree, none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )
    if tree is None or type(tree) in (tuple, dict):
        children = tuple(children)
    if isinstance(meta, list):
        meta = tuple(meta)
    return children, meta


def flatten_one_level_with_keys(tree):
    """The children of ``tree``'s root node with their keys, and its metadata (as
    ``flatten_one_level``; ``jax.tree_util.flatten_one_level_with_keys``).

    Arguments:
        tree: a pytree whose root is a container (not a leaf: a ValueError).

    Returns:
        ``(((key, child), ...), metadata)``: each key a ``SequenceKey``, ``DictKey``,
        ``GetAttrKey`` or ``FlattenedIndexKey``, as in ``tree_flatten_with_path``'s paths.

    Differences from JAX: a NamedTuple's children get the keys of their own fields (JAX 0.10.2
    gives every child the first field's key).

    Example:
        >>> from functx import tree_util
        >>> tree_util.flatten_one_level_with_keys({"b": 1, "a": (2, 3)})
        (((DictKey(key='a'), (2, 3)), (DictKey(key='b'), 1)), ('a', 'b'))
    """
    children, meta = flatten_one_level(tree)
    if tree is None:
        return (), meta
    accessors, _, _ = optree.tree_flatten_with_accessor(
        tree, lambda x: x is not tree, none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )
    pairs = [(_key_of(a[0]), c) for a, c in zip(accessors, children, strict=True)]
    return (tuple(pairs) if type(tree) in (tuple, list, dict) else pairs), meta


def is_tree_node(typ) -> bool:
    """Whether ``typ`` is a pytree node type: a container functx flattens (tuple, list, dict,
    None's type, ...), a NamedTuple class, or a registered class (``jax.tree_util.is_tree_node``).

    Arguments:
        typ: a type (anything else gives False).

    Returns:
        a bool.

    Example:
        >>> from functx import tree_util
        >>> tree_util.is_tree_node(dict), tree_util.is_tree_node(int)
        (True, False)
    """
    if not isinstance(typ, type):
        return False
    return optree.register_pytree_node.get(typ, namespace=PYTREE_NAMESPACE) is not None


class _Registry:
    """The pytree registry functx flattens with (``jax.tree_util.default_registry``): JAX's
    methods on it, each the ``tree_util`` function of that job."""

    def flatten(self, tree, leaf_predicate=None):
        """``tree_flatten(tree, leaf_predicate)``."""
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        """``flatten_one_level(tree)``, or None when ``tree`` is a leaf."""
        return flatten_one_level(tree) if _is_node_value(tree) else None

    def flatten_one_level_with_keys(self, tree):
        """``flatten_one_level_with_keys(tree)``, or None when ``tree`` is a leaf."""
        return flatten_one_level_with_keys(tree) if _is_node_value(tree) else None

    def flatten_with_path(self, tree, leaf_predicate=None):
        """``tree_flatten_with_path`` with ``leaf_predicate(path, x)``."""
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

    def is_node(self, type):  # noqa: A002 - JAX's parameter name
        """``is_tree_node(type)``."""
        return is_tree_node(type)

    def register_node(self, type, to_iterable, from_iterable, to_iterable_with_keys=None):  # noqa: A002
        """``register_pytree_node``."""
        return register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, type, data_fields, meta_fields, /):  # noqa: A002
        """``register_dataclass`` with these fields."""
        return register_dataclass(type, data_fields, meta_fields)

    def __repr__(self):
        return "<functx.tree_util.default_registry>"


def _is_node_value(tree) -> bool:
    return is_tree_node(type(tree))


default_registry = _Registry()


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` with each of its leaves repeated over the subtree of ``full_tree`` it
    covers (``prefix_tree`` must be a prefix of ``full_tree``'s structure).

    Arguments:
        prefix_tree: a pytree whose structure is a prefix of ``full_tree``'s.
        full_tree: a pytree.
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        A pytree of ``full_tree``'s structure.

    Example:
        >>> from functx import tree_util
        >>> tree_util.tree_broadcast((1, {"a": 2}), ((3, 4), {"a": [5, 6]}))
        ((1, 1), {'a': [2, 2]})
    """
    _check_callable("tree_broadcast", "is_leaf", is_leaf, optional=True)
    try:
        return optree.tree_broadcast_prefix(
            prefix_tree, full_tree, is_leaf=is_leaf, none_is_leaf=False, namespace=PYTREE_NAMESPACE
        )
    except (ValueError, TypeError) as e:
        raise FunctxValueError(
            f"tree_broadcast: the first tree is not a prefix of the second ({e}){where()}"
        ) from None


_UNSPECIFIED = object()


def tree_reduce_associative(operation, tree, *, identity=_UNSPECIFIED, is_leaf=None):
    """Reduce the leaves of ``tree`` with an associative ``operation``, pairing neighbours in a
    balanced tree (``log2(n)`` levels).

    Arguments:
        operation: an associative function of two values.
        tree: a pytree.
        identity: the result for a tree with no leaves (required then).
        is_leaf: optional predicate marking subtrees to treat as leaves.

    Returns:
        The reduced value.

    Example:
        >>> from functx import tree_util
        >>> tree_util.tree_reduce_associative(lambda a, b: a + b, [1, 2, (3, 4)])
        10
    """
    _check_callable("tree_reduce_associative", "operation", operation)
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _UNSPECIFIED:
            raise FunctxTypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(leaves) > 1:
        pairs = [operation(a, b) for a, b in zip(leaves[::2], leaves[1::2])]
        leaves = pairs + leaves[len(pairs) * 2 :]
    return leaves[0]


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

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
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "tree_transpose",
    "keystr",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "Partial",
    "KeyEntry",
    "KeyPath",
    "treedef_is_leaf",
    "treedef_tuple",
    "all_leaves",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "default_registry",
    "tree_broadcast",
    "tree_reduce_associative",
]
