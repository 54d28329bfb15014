"""``functx.export``: a jitted function staged for given argument shapes, kept and reloaded as
bytes (JAX's ``jax.export``).

JAX exports StableHLO; functx exports its own IR, the function's Jaxpr. ``Exported.serialize()``
writes it as UTF-8 JSON (no pickle, no code objects), and ``deserialize`` rebuilds it from that
data alone: each equation names a primitive of functx's registry, and its parameters are plain
data (numbers, strings, tuples, dtypes, arrays as raw little-endian bytes, nested Jaxprs, and
members of functx's own enums). A Jaxpr whose equations carry anything else (a Python function:
``custom_jvp``/``custom_vjp`` rules, host callbacks) is refused at ``serialize`` with the
primitive and parameter named. The format, version 1::

  {"format": "functx.export", "version": 1, "fun_name": str, "platforms": [str, ...],
   "in_tree": tree, "out_tree": tree, "jaxpr": closed}

  tree    {"leaf": 1} | {"none": 1} | {"tuple": [tree...]} | {"list": [tree...]}
          | {"dict": [[key, tree]...]}
  closed  {"jaxpr": jaxpr, "consts": [value...]}
  jaxpr   {"constvars": [aval...], "invars": [aval...], "eqns": [eqn...], "outvars": [atom...]}
          (variables are numbered in order of definition: constvars, invars, then each
          equation's outputs)
  eqn     {"prim": name, "in": [atom...], "out": [aval...], "params": {name: value}}
  atom    {"var": n} | {"lit": value, "aval": aval}
  aval    {"shape": [int...], "dtype": name, "weak": bool}
  value   JSON scalar | {"tuple": [...]} | {"list": [...]} | {"dict": [[key, value]...]}
          | {"dtype": name} | {"scalar": value, "dtype": name}
          | {"array": base64, "dtype": name, "shape": [...]} | {"closed": closed}
          | {"open": jaxpr} | {"enum": "functx.module:Class.MEMBER"}

Loading bytes you did not write runs only functx primitives on your arrays (no code of the
writer's), but it may still compute anything: check where the bytes come from.
"""

from __future__ import annotations

import base64
import enum
import importlib
import json

import ml_dtypes
import numpy as np

from functx import dtypes
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from functx.devices.device import default_backend
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import jaxpr_as_fun
from functx.jit import jit
from functx.primitives import registry
from functx.tracing import get_aval, trace_pytree
from functx.tree_util import tree_flatten, tree_structure, tree_unflatten

__all__ = ["Exported", "deserialize", "export", "symbolic_shape"]

_FORMAT, _VERSION = "functx.export", 1


class Exported:
    """A function staged for given argument shapes and dtypes (``jax.export.Exported``):
    ``call`` runs it, ``serialize`` gives its bytes (see the module's docstring for the format).

    Attributes: ``fun_name``, ``in_tree``/``out_tree`` (the argument and result pytrees),
    ``in_avals``/``out_avals`` (their leaves' ``ShapedArray``), ``platforms``, ``nr_devices``,
    ``jaxpr`` (functx's IR of the function).

    Example:
      >>> import numpy as np
      >>> import functx, functx.numpy as jnp
      >>> from functx import export
      >>> exp = export.export(functx.jit(lambda x: jnp.sin(x) * 2.0))(np.zeros(3, np.float32))
      >>> exp.in_avals, exp.call(np.float32([0.0, 0.5, 1.0]))
      ((ShapedArray(float32[3]),), Array([0.       , 0.95885..., 1.6829419], dtype=float32))
    """

    nr_devices = 1

    def __init__(self, fun_name, in_tree, out_tree, jaxpr: ClosedJaxpr, platforms):
        self.fun_name = fun_name
        self.in_tree, self.out_tree = in_tree, out_tree
        self.jaxpr = jaxpr
        self.in_avals = tuple(v.aval for v in jaxpr.jaxpr.invars)
        self.out_avals = tuple(a.aval for a in jaxpr.jaxpr.outvars)
        self._platforms = None if platforms is None else tuple(platforms)
        self._run = jit(jaxpr_as_fun(jaxpr))

    @property
    def platforms(self) -> tuple:
        """The platforms recorded (default: the default backend, looked up on first use)."""
        if self._platforms is None:
            self._platforms = (default_backend(),)
        return self._platforms

    def __repr__(self):
        return f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals})"

    def call(self, *args, **kwargs):
        """Run the exported function on arguments of its pytree, shapes and dtypes.

        Arguments:
          *args, **kwargs: as the function was exported for.
        Returns:
          Its results, in its result pytree.
        Raises:
          ValueError: a different pytree, shape or dtype.
        Example:
          >>> import numpy as np
          >>> import functx
          >>> from functx import export
          >>> exp = export.export(functx.jit(lambda a, b: a @ b))(np.ones((2, 3)), np.ones((3,)))
          >>> exp.call(np.ones((2, 3)), np.arange(3.0))
          Array([3., 3.], dtype=float32)
        """
        leaves, tree = tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise FunctxValueError(
                f"Exported.call: the arguments' pytree {tree} is not the exported {self.in_tree}"
            )
        for i, (x, want) in enumerate(zip(leaves, self.in_avals)):
            got = get_aval(x)
            if got.shape != want.shape or got.dtype != want.dtype:
                raise FunctxValueError(
                    f"Exported.call: argument {i} is {got.str_short()}, the function was "
                    f"exported for {want.str_short()}"
                )
        return tree_unflatten(self.out_tree, list(self._run(*leaves)))

    def mlir_module(self) -> str:
        """The exported program as text: functx's Jaxpr (JAX's is a StableHLO module).

        Arguments:
          none.
        Returns:
          A string.
        Example:
          >>> import numpy as np
          >>> import functx
          >>> from functx import export
          >>> print(export.export(functx.jit(lambda x: x + 1.0))(np.ones(2)).mlir_module())
          { lambda ; a:f32[2]. let b:f32[2] = add a 1.0:f32[] in (b,) }
        """
        return str(self.jaxpr)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The exported function as bytes (the module's format; ``deserialize`` reads them).

        Arguments:
          vjp_order: JAX's number of derivative orders to include (only 0: functx
            differentiates the deserialized Jaxpr itself).
        Returns:
          A ``bytearray``.
        Raises:
          ValueError: a parameter that is not plain data (a Python function, ...).
        Example:
          >>> import numpy as np
          >>> import functx
          >>> from functx import export
          >>> blob = export.export(functx.jit(lambda x: x * 3.0))(np.ones(2)).serialize()
          >>> export.deserialize(blob).call(np.float32([1.0, 2.0]))
          Array([3., 6.], dtype=float32)
        """
        if vjp_order:
            raise UnsupportedError("Exported.serialize: only vjp_order=0 (functx's grad of the "
                                   "deserialized function needs no stored derivative)")  # fmt: skip
        doc = {
            "format": _FORMAT,
            "version": _VERSION,
            "fun_name": self.fun_name,
            "platforms": list(self.platforms),
            "in_tree": _enc_tree(self.in_tree),
            "out_tree": _enc_tree(self.out_tree),
            "jaxpr": _Writer().closed(self.jaxpr),
        }
        return bytearray(json.dumps(doc, separators=(",", ":")).encode())


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """Stage a jitted function for the argument shapes it is then called with
    (``jax.export.export``): ``export(jit(f))(*args)`` is an ``Exported``; the arguments may be
    arrays or ``ShapeDtypeStruct`` objects.

    Arguments:
      fun_jit: a function from ``functx.jit``.
      platforms: the platforms to record (default: this process's default backend); functx's
        Jaxpr runs on any of them.
      disabled_checks: JAX's safety checks to skip (none apply here).
    Returns:
      A function of example arguments returning an ``Exported``.
    Raises:
      TypeError: ``fun_jit`` is not a jitted function.

    Differences from JAX: the exported program is functx's Jaxpr, not StableHLO; no symbolic
    (shape-polymorphic) dimensions.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx import export
      >>> spec = functx.ShapeDtypeStruct((2,), jnp.float32)
      >>> export.export(functx.jit(jnp.cos))(spec).out_avals
      (ShapedArray(float32[2]),)
    """
    del disabled_checks
    if not hasattr(fun_jit, "lower"):
        raise FunctxTypeError(
            f"export: the function to export must be the result of functx.jit, got {fun_jit!r}"
        )

    def do_export(*args, **kwargs) -> Exported:
        closed, in_tree, out_tree, _ = trace_pytree(fun_jit, args, kwargs)
        name = getattr(fun_jit, "__name__", "fun")
        return Exported(name, in_tree, out_tree, closed, platforms)

    return do_export


def deserialize(blob) -> Exported:
    """An ``Exported`` from the bytes ``Exported.serialize`` wrote (``jax.export.deserialize``).

    Arguments:
      blob: ``bytes`` or ``bytearray``.
    Returns:
      An ``Exported``.
    Raises:
      ValueError: not functx export data, another format version, or a primitive or value
        functx does not have.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx import export
      >>> blob = export.export(functx.jit(lambda x: -x))(np.ones(2, np.float32)).serialize()
      >>> export.deserialize(blob).in_avals
      (ShapedArray(float32[2]),)
    """
    try:
        doc = json.loads(bytes(blob).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FunctxValueError(f"deserialize: not functx export data ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise FunctxValueError("deserialize: not functx export data")
    if doc.get("version") != _VERSION:
        raise FunctxValueError(f"deserialize: format version {doc.get('version')}, not {_VERSION}")
    closed = _Reader().closed(doc["jaxpr"])
    in_tree, out_tree = _dec_tree(doc["in_tree"]), _dec_tree(doc["out_tree"])
    return Exported(doc["fun_name"], in_tree, out_tree, closed, doc["platforms"])


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """A shape from its text (``jax.export.symbolic_shape``): "3, 4" is ``(3, 4)``.

    functx has no symbolic dimensions: every dimension must be an integer (or "_" where
    ``like`` gives it).

    Arguments:
      shape_spec: comma-separated dimensions (parentheses allowed), or None for ``like``.
      constraints, scope: JAX's options for symbolic dimensions (none allowed).
      like: a shape supplying the dimensions written "_".
    Returns:
      A tuple of ints.
    Raises:
      NotImplementedError: a symbolic dimension or constraint; ValueError: a malformed spec.
    Example:
      >>> from functx import export
      >>> export.symbolic_shape("(3, 4)"), export.symbolic_shape("_, 2", like=(5, 2))
      ((3, 4), (5, 2))
    """
    if constraints or scope is not None:
        raise UnsupportedError("symbolic_shape: functx has no symbolic dimensions to constrain")
    if shape_spec is None:
        return tuple(int(d) for d in like)
    text = shape_spec.strip().removeprefix("(").removesuffix(")").strip()
    parts = [p.strip() for p in text.split(",")] if text else []
    parts = parts[:-1] if parts and not parts[-1] else parts
    if like is not None and len(like) != len(parts):
        raise FunctxValueError(f"symbolic_shape: {shape_spec!r} and like={like} differ in rank")
    out = []
    for i, p in enumerate(parts):
        if p == "_" and like is not None and like[i] is not None:
            out.append(int(like[i]))
        elif p.isdigit():
            out.append(int(p))
        else:
            raise UnsupportedError(
                f"symbolic_shape: {p!r} in {shape_spec!r} is symbolic; functx's shapes are "
                "concrete integers"
            )
    return tuple(out)


# --- encoding ------------------------------------------------------------------------------------
_LEAF = object()


def _enc_tree(treedef):
    def enc(node):
        if node is _LEAF:
            return {"leaf": 1}
        if node is None:
            return {"none": 1}
        if type(node) is tuple:
            return {"tuple": [enc(v) for v in node]}
        if type(node) is list:
            return {"list": [enc(v) for v in node]}
        if type(node) is dict and all(isinstance(k, str) for k in node):
            return {"dict": [[k, enc(v)] for k, v in node.items()]}
        raise FunctxValueError(
            f"Exported.serialize: the pytree node {type(node).__name__} cannot be serialized "
            "(tuples, lists, dicts with str keys and None can)"
        )

    return enc(tree_unflatten(treedef, [_LEAF] * treedef.num_leaves))


def _dec_tree(doc):
    def dec(d):
        if "leaf" in d:
            return _LEAF
        if "none" in d:
            return None
        if "tuple" in d:
            return tuple(dec(v) for v in d["tuple"])
        if "list" in d:
            return [dec(v) for v in d["list"]]
        return {k: dec(v) for k, v in d["dict"]}

    return tree_structure(dec(doc), is_leaf=lambda v: v is _LEAF)


def _dtype_name(dt) -> str:
    return np.dtype(dt).name


def _dtype(name: str) -> np.dtype:
    if not isinstance(name, str):
        raise FunctxValueError(f"deserialize: bad dtype {name!r}")
    found = getattr(ml_dtypes, name, None)
    dt = np.dtype(found) if found is not None else np.dtype(name)
    if dt not in dtypes.SUPPORTED and dt.kind not in "biufc":
        raise FunctxValueError(f"deserialize: dtype {name} is not an array dtype of functx's")
    return dt


def _aval_doc(a: ShapedArray):
    return {"shape": list(a.shape), "dtype": _dtype_name(a.dtype), "weak": bool(a.weak_type)}


def _aval(d) -> ShapedArray:
    return ShapedArray(tuple(int(n) for n in d["shape"]), _dtype(d["dtype"]), bool(d["weak"]))


class _Writer:
    def closed(self, c: ClosedJaxpr):
        return {
            "jaxpr": self.jaxpr(c.jaxpr),
            "consts": [self.value(v, "a constant") for v in c.consts],
        }

    def jaxpr(self, j: Jaxpr):
        ids: dict = {}
        for v in (*j.constvars, *j.invars):
            ids[v] = len(ids)

        def atom(a):
            if isinstance(a, Literal):
                return {"lit": self.value(a.val, "a literal"), "aval": _aval_doc(a.aval)}
            return {"var": ids[a]}

        eqns = []
        for e in j.eqns:
            what = f"primitive {e.prim.name}"
            params = {k: self.value(v, f"parameter {k} of {what}") for k, v in e.params.items()}
            ins, outs = [atom(a) for a in e.invars], [_aval_doc(v.aval) for v in e.outvars]
            eqns.append({"prim": e.prim.name, "in": ins, "out": outs, "params": params})
            for v in e.outvars:
                ids[v] = len(ids)
        return {
            "constvars": [_aval_doc(v.aval) for v in j.constvars],
            "invars": [_aval_doc(v.aval) for v in j.invars],
            "eqns": eqns,
            "outvars": [atom(a) for a in j.outvars],
        }

    def value(self, v, what):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if type(v) is tuple:
            return {"tuple": [self.value(x, what) for x in v]}
        if type(v) is list:
            return {"list": [self.value(x, what) for x in v]}
        if type(v) is dict and all(isinstance(k, str) for k in v):
            return {"dict": [[k, self.value(x, what)] for k, x in v.items()]}
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            return {"dtype": _dtype_name(v)}
        if isinstance(v, np.generic):
            return {"scalar": v.item(), "dtype": _dtype_name(v.dtype)}
        if isinstance(v, enum.Enum) and type(v).__module__.startswith("functx."):
            return {"enum": f"{type(v).__module__}:{type(v).__qualname__}.{v.name}"}
        if isinstance(v, ClosedJaxpr):
            return {"closed": self.closed(v)}
        if isinstance(v, Jaxpr):
            return {"open": self.jaxpr(v)}
        if hasattr(v, "__array__") and not callable(v):
            a = np.ascontiguousarray(np.asarray(v))
            if a.dtype.kind in "biufcV" and a.dtype.hasobject is False:
                le = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
                return {"array": base64.b64encode(le.tobytes()).decode(),
                        "dtype": _dtype_name(a.dtype), "shape": list(a.shape)}  # fmt: skip
        raise FunctxValueError(
            f"Exported.serialize: {what} is {type(v).__name__} {v!r:.60}, which is not plain "
            "data (functx serializes no Python functions or objects)"
        )


class _Reader:
    def closed(self, d):
        return ClosedJaxpr(self.jaxpr(d["jaxpr"]), [self.value(v) for v in d["consts"]])

    def jaxpr(self, d):
        env = [Var(_aval(a)) for a in (*d["constvars"], *d["invars"])]
        constvars, invars = env[: len(d["constvars"])], env[len(d["constvars"]) :]

        def atom(a):
            if "var" in a:
                return env[int(a["var"])]
            aval = _aval(a["aval"])
            val = self.value(a["lit"])
            return Literal(
                val if isinstance(val, np.generic) else np.asarray(val, aval.dtype)[()], aval
            )

        eqns = []
        for e in d["eqns"]:
            prim = registry.get(e["prim"])
            if prim is None:
                raise FunctxValueError(f"deserialize: functx has no primitive {e['prim']!r}")
            outvars = [Var(_aval(a)) for a in e["out"]]
            params = {k: self.value(v) for k, v in e["params"].items()}
            eqns.append(Eqn(prim, [atom(a) for a in e["in"]], outvars, params))
            env.extend(outvars)
        return Jaxpr(constvars, invars, eqns, [atom(a) for a in d["outvars"]])

    def value(self, v):
        if not isinstance(v, dict):
            return v
        if "tuple" in v:
            return tuple(self.value(x) for x in v["tuple"])
        if "list" in v:
            return [self.value(x) for x in v["list"]]
        if "dict" in v:
            return {k: self.value(x) for k, x in v["dict"]}
        if "scalar" in v:
            return _dtype(v["dtype"]).type(v["scalar"])
        if "dtype" in v and "array" not in v:
            return _dtype(v["dtype"])
        if "array" in v:
            dt = _dtype(v["dtype"])
            raw = base64.b64decode(v["array"])
            return np.frombuffer(raw, dt.newbyteorder("<")).astype(dt).reshape(v["shape"])
        if "closed" in v:
            return self.closed(v["closed"])
        if "open" in v:
            return self.jaxpr(v["open"])
        if "enum" in v:
            return _enum(v["enum"])
        raise FunctxValueError(f"deserialize: unknown value {v!r:.60}")


def _enum(text: str):
    """A member of an enum class of a functx module, by "module:Class.MEMBER" (only functx's
    modules are imported, only an ``enum.Enum`` member is returned)."""
    module, _, rest = text.partition(":")
    cls_name, _, member = rest.rpartition(".")
    if not module.startswith("functx.") or not cls_name or "." in cls_name:
        raise FunctxValueError(f"deserialize: {text!r} is not an enum of functx's")
    cls = getattr(importlib.import_module(module), cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)) or member not in cls.__members__:
        raise FunctxValueError(f"deserialize: {text!r} is not an enum of functx's")
    return cls[member]
