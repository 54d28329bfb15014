"""Property-based bad input over functx.numpy (issue 16): for a broad list of public functions,
hypothesis draws arguments from pools of good and bad values (floats, strings, None, nested lists
where ints are expected; out-of-range and repeated axes; negative and huge sizes; mismatched
shapes; unknown modes). Whatever is drawn, nothing but a functx error may escape, and a call that
succeeds must give what JAX gives when JAX accepts it too."""

import warnings

import jax.numpy as jnp
import numpy as np
from hypothesis import given, strategies as st

import functx.numpy as fnp
from functx.errors import FunctxError

A2 = np.arange(6.0).reshape(2, 3)
A1 = np.arange(4.0)
AI = np.arange(6, dtype=np.int32).reshape(2, 3)
A0 = np.float64(2.5)
AE = np.zeros((0, 3))

ARRAYS = [A2, A1, AI, A0, AE]
INTS = [0, 1, 2, -1, -3, 3, 5, 2**63, 2**62, 2**70, -(2**62), np.int64(1), np.int32(-2)]
BAD = [
    1.5,
    1.0,
    "0",
    "zz",
    None,
    [[1]],
    [1.5],
    (0, 0),
    (0, 5),
    [0, -2],
    True,
    np.nan,
    np.array([1, 2]),
    b"x",
    object(),
]
AXES = [
    None,
    0,
    1,
    -1,
    -2,
    2,
    3,
    (0, 1),
    (1, 0),
    (0, 0),
    (0, -2),
    [0],
    (),
    1.0,
    "1",
    (0, 1.5),
    True,
    np.int64(0),
]
SHAPES = [
    0,
    3,
    (2, 3),
    (),
    [2],
    (0, 4),
    -1,
    (2, -1),
    (2**62,),
    (2**40, 2**40),
    2.0,
    (2.0,),
    "3",
    None,
    [[2]],
    (True,),
    np.array([2, 3]),
]
MODES = [
    None,
    "constant",
    "edge",
    "wrap",
    "reflect",
    "symmetric",
    "clip",
    "fill",
    "promise_in_bounds",
    "drop",
    "raise",
    "mean",
    "zz",
    "",
    3,
    None,
]
DTYPES = [None, np.float32, np.int32, "float64", bool, "zz", 3, object, np.complex64, "bfloat16"]

AX = st.sampled_from(AXES)
ARR = st.sampled_from(ARRAYS)
INT_LIKE = st.sampled_from(INTS + BAD)
SHAPE = st.sampled_from(SHAPES)
MODE = st.sampled_from(MODES)
DT = st.sampled_from(DTYPES)
ANY = st.sampled_from(ARRAYS + INTS + BAD + SHAPES + MODES)

# name -> a strategy of (args, kwargs); the same call goes to functx.numpy and jax.numpy.
CALLS = {
    "sum": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "mean": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX, "dtype": DT})),
    "prod": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "max": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "min": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "any": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "all": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "var": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX, "ddof": INT_LIKE})),
    "std": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX, "ddof": INT_LIKE})),
    "argmax": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "argmin": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "cumsum": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX, "dtype": DT})),
    "cumprod": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "nansum": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "nanmax": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "count_nonzero": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "ptp": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "zeros": st.tuples(st.tuples(SHAPE), st.fixed_dictionaries({"dtype": DT})),
    "ones": st.tuples(st.tuples(SHAPE), st.fixed_dictionaries({"dtype": DT})),
    "empty": st.tuples(st.tuples(SHAPE), st.fixed_dictionaries({})),
    "full": st.tuples(
        st.tuples(SHAPE, st.sampled_from([1.0, 2, A1, None, "x"])),
        st.fixed_dictionaries({"dtype": DT}),
    ),
    "arange": st.tuples(
        st.tuples(INT_LIKE),
        st.fixed_dictionaries(
            {"stop": st.sampled_from([None, 5, -3, 2.5, "x", np.inf]), "step": INT_LIKE}
        ),
    ),
    "linspace": st.tuples(
        st.tuples(st.sampled_from([0, 1.5, A1, None, "x"]), INT_LIKE),
        st.fixed_dictionaries({"num": INT_LIKE}),
    ),
    "eye": st.tuples(
        st.tuples(INT_LIKE),
        st.fixed_dictionaries(
            {"M": st.sampled_from([None] + INTS + BAD), "k": INT_LIKE, "dtype": DT}
        ),
    ),
    "identity": st.tuples(st.tuples(INT_LIKE), st.fixed_dictionaries({})),
    "tri": st.tuples(st.tuples(INT_LIKE), st.fixed_dictionaries({"k": INT_LIKE})),
    "reshape": st.tuples(st.tuples(ARR, SHAPE), st.fixed_dictionaries({})),
    "broadcast_to": st.tuples(st.tuples(ARR, SHAPE), st.fixed_dictionaries({})),
    "transpose": st.tuples(st.tuples(ARR, AX), st.fixed_dictionaries({})),
    "squeeze": st.tuples(st.tuples(ARR, AX), st.fixed_dictionaries({})),
    "expand_dims": st.tuples(st.tuples(ARR, AX), st.fixed_dictionaries({})),
    "flip": st.tuples(st.tuples(ARR, AX), st.fixed_dictionaries({})),
    "moveaxis": st.tuples(st.tuples(ARR, AX, AX), st.fixed_dictionaries({})),
    "swapaxes": st.tuples(st.tuples(ARR, AX, AX), st.fixed_dictionaries({})),
    "roll": st.tuples(st.tuples(ARR, INT_LIKE), st.fixed_dictionaries({"axis": AX})),
    "ravel": st.tuples(st.tuples(ARR), st.fixed_dictionaries({})),
    "tile": st.tuples(
        st.tuples(ARR, st.sampled_from(INTS[:6] + BAD + [(2, 1), (-1, 2)])),
        st.fixed_dictionaries({}),
    ),
    "repeat": st.tuples(
        st.tuples(ARR, st.sampled_from(INTS[:7] + BAD + [[1, 2, 0, 1]])),
        st.fixed_dictionaries({"axis": AX}),
    ),
    "pad": st.tuples(
        st.tuples(
            ARR,
            st.sampled_from(
                INTS[:7]
                + BAD
                + [
                    (1, 2),
                    ((1, 2), (0, 1)),
                    ((1,), (2,)),
                    (1, 2, 3),
                    ((-1, 0), (0, 0)),
                    [[1, 2, 3]],
                ]
            ),
        ),
        st.fixed_dictionaries({"mode": MODE}),
    ),
    "split": st.tuples(
        st.tuples(ARR, st.sampled_from(INTS[:7] + BAD + [[1, 2], [1, -1]])),
        st.fixed_dictionaries({"axis": AX}),
    ),
    "array_split": st.tuples(
        st.tuples(ARR, st.sampled_from(INTS[:7] + BAD + [[1, 2]])),
        st.fixed_dictionaries({"axis": AX}),
    ),
    "concatenate": st.tuples(
        st.tuples(st.lists(ARR, max_size=3)), st.fixed_dictionaries({"axis": AX})
    ),
    "stack": st.tuples(st.tuples(st.lists(ARR, max_size=3)), st.fixed_dictionaries({"axis": AX})),
    "vstack": st.tuples(st.tuples(st.lists(ARR, max_size=3)), st.fixed_dictionaries({})),
    "hstack": st.tuples(st.tuples(st.lists(ARR, max_size=3)), st.fixed_dictionaries({})),
    "where": st.tuples(st.tuples(ARR, ARR, ARR), st.fixed_dictionaries({})),
    "clip": st.tuples(
        st.tuples(ARR, st.sampled_from([0, 1.5, None, A1, A2])), st.fixed_dictionaries({})
    ),
    "take": st.tuples(
        st.tuples(
            ARR,
            st.sampled_from(
                [np.array([0, -1, 5]), [1], 0, 1.5, np.array([0.5]), [[0, 1]], None, "x"]
            ),
        ),
        st.fixed_dictionaries({"axis": AX, "mode": MODE}),
    ),
    "take_along_axis": st.tuples(
        st.tuples(
            ARR,
            st.sampled_from(
                [np.array([[0, -1, 2], [1, 5, 0]]), np.array([0, 2]), np.array([[0.5]]), None]
            ),
        ),
        st.fixed_dictionaries({"axis": AX, "mode": MODE}),
    ),
    "meshgrid": st.tuples(
        st.tuples(ARR, ARR),
        st.fixed_dictionaries({"indexing": st.sampled_from(["xy", "ij", "zz", None, 1])}),
    ),
    "diagonal": st.tuples(st.tuples(ARR, INT_LIKE, AX, AX), st.fixed_dictionaries({})),
    "trace": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"offset": INT_LIKE})),
    "tril": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"k": INT_LIKE})),
    "astype": st.tuples(st.tuples(ARR, DT), st.fixed_dictionaries({})),
    "round": st.tuples(st.tuples(ARR, INT_LIKE), st.fixed_dictionaries({})),
    "atleast_2d": st.tuples(st.tuples(ANY), st.fixed_dictionaries({})),
    "add": st.tuples(st.tuples(ARR, ANY), st.fixed_dictionaries({})),
    "matmul": st.tuples(st.tuples(ARR, ARR), st.fixed_dictionaries({})),
    "dot": st.tuples(st.tuples(ARR, ARR), st.fixed_dictionaries({})),
    "tensordot": st.tuples(
        st.tuples(ARR, ARR),
        st.fixed_dictionaries(
            {"axes": st.sampled_from([0, 1, 2, -1, 1.5, ((0,), (1,)), ((0,), (5,)), "x"])}
        ),
    ),
    "vecdot": st.tuples(st.tuples(ARR, ARR), st.fixed_dictionaries({"axis": AX})),
    "average": st.tuples(
        st.tuples(ARR),
        st.fixed_dictionaries({"axis": AX, "weights": st.sampled_from([None, A1, A2, np.ones(3)])}),
    ),
    "nanmean": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "cumulative_sum": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"axis": AX})),
    "zeros_like": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"shape": SHAPE, "dtype": DT})),
    "full_like": st.tuples(
        st.tuples(ARR, st.sampled_from([1.0, "x", None, A1])),
        st.fixed_dictionaries({"shape": SHAPE}),
    ),
    "diag": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"k": INT_LIKE})),
    "broadcast_arrays": st.tuples(st.tuples(ARR, ARR), st.fixed_dictionaries({})),
    "hsplit": st.tuples(st.tuples(ARR, INT_LIKE), st.fixed_dictionaries({})),
    "vsplit": st.tuples(st.tuples(ARR, INT_LIKE), st.fixed_dictionaries({})),
    "permute_dims": st.tuples(st.tuples(ARR, AX), st.fixed_dictionaries({})),
    "kron": st.tuples(st.tuples(ARR, ANY), st.fixed_dictionaries({})),
    "outer": st.tuples(st.tuples(ARR, ANY), st.fixed_dictionaries({})),
    "nan_to_num": st.tuples(st.tuples(ARR), st.fixed_dictionaries({"nan": ANY})),
    "power": st.tuples(st.tuples(ARR, ANY), st.fixed_dictionaries({})),
    "isfinite": st.tuples(st.tuples(ANY), st.fixed_dictionaries({})),
    "sin": st.tuples(st.tuples(ANY), st.fixed_dictionaries({})),
}


def _jax_value(name, args, kwargs):
    """JAX's answer, or None where JAX rejects the call (or cannot be compared)."""
    dt = kwargs.get("dtype")
    if (
        dt is not None
        and name in ("mean", "cumsum")
        and not isinstance(dt, str)
        and (dt is bool or (isinstance(dt, type) and issubclass(dt, np.integer)))
    ):
        return None  # XLA dies with SIGFPE folding an integer 0 / 0 (jnp.mean(empty, int32))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(jnp, name)(*args, **kwargs)
        return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)
    except Exception:  # noqa: BLE001 (any rejection by JAX: functx must reject or agree)
        return None


def _check(name, args, kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(fnp, name)(*args, **kwargs)
    except FunctxError:
        return "rejected"
    except Exception as e:  # noqa: BLE001
        raise AssertionError(
            f"fnp.{name}(*{args!r}, **{kwargs!r}) raised a non-functx {type(e).__name__}: {e}"
        ) from e
    want = _jax_value(name, args, kwargs)
    if want is not None and name not in ("empty", "split", "array_split"):
        got = [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)
        if isinstance(want, list):
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape, (name, args, kwargs, g.shape, w.shape)
        else:
            assert got.shape == want.shape, (name, args, kwargs, got.shape, want.shape)
    return "ok"


@given(st.data())
def test_only_functx_errors_escape(data):
    name = data.draw(st.sampled_from(sorted(CALLS)), label="function")
    args, kwargs = data.draw(CALLS[name], label="arguments")
    kwargs = {k: v for k, v in kwargs.items() if not (k == "mode" and v is None and name == "pad")}
    assert _check(name, args, kwargs) in ("rejected", "ok")


def test_every_listed_function_rejects_something():
    """A fixed sample per function (so each one is exercised whatever hypothesis draws)."""
    for name in CALLS:
        args, kwargs = _first_bad(name)
        assert _check(name, args, kwargs) == "rejected", (name, args, kwargs)


def _first_bad(name):
    arr = A2
    fixed = {
        "zeros": ((2.5,), {}),
        "ones": (("3",), {}),
        "empty": ((-1,), {}),
        "full": (((2**62, 4), 1.0), {}),
        "arange": ((0, 5, 0), {}),
        "linspace": ((0, 1, -1), {}),
        "eye": ((2**70,), {}),
        "identity": ((-2,), {}),
        "tri": ((1.5,), {}),
        "reshape": ((arr, (4, 4)), {}),
        "broadcast_to": ((arr, (3, 3)), {}),
        "tile": ((arr, 1.5), {}),
        "repeat": ((arr, 1.5), {}),
        "pad": ((arr, -1), {}),
        "split": ((arr, 0), {}),
        "array_split": ((arr, -1), {}),
        "concatenate": (([arr, A1],), {}),
        "stack": (([arr, A1],), {}),
        "vstack": (([],), {}),
        "hstack": (([],), {}),
        "where": ((arr, A1, arr), {}),
        "clip": ((arr, "x"), {}),
        "take": ((arr, [1]), {"mode": "zz"}),
        "take_along_axis": ((arr, np.array([[0.5]])), {"axis": 0}),
        "meshgrid": ((A1, A1), {"indexing": "zz"}),
        "diagonal": ((arr, 0, 0, 0), {}),
        "trace": ((A1,), {}),
        "tril": ((A1,), {}),
        "astype": ((arr, "zz"), {}),
        "round": ((arr, 1.5), {}),
        "atleast_2d": ((object(),), {}),
        "add": ((arr, "x"), {}),
        "sin": (("x",), {}),
        "roll": ((arr, 1.5), {}),
        "moveaxis": ((arr, 0, 0.5), {}),
        "swapaxes": ((arr, 0, 5), {}),
        "ravel": ((arr,), {"order": "Z"}),
        "transpose": ((arr, (0, 0)), {}),
        "squeeze": ((arr, 0), {}),
        "expand_dims": ((arr, (0, 0)), {}),
        "flip": ((arr, 1.5), {}),
        "matmul": ((arr, arr), {}),
        "dot": ((arr, arr), {}),
        "tensordot": ((arr, arr), {"axes": 3}),
        "vecdot": ((arr, arr), {"axis": 2}),
        "average": ((arr,), {"weights": A1, "axis": 1}),
        "zeros_like": ((arr,), {"shape": -1}),
        "full_like": ((arr, 1.0), {"shape": 2.5}),
        "diag": ((A1,), {"k": 1.5}),
        "broadcast_arrays": ((arr, A1), {}),
        "hsplit": ((arr, 2), {}),
        "vsplit": ((arr, 0), {}),
        "permute_dims": ((arr, (0, 0)), {}),
        "kron": ((arr, "x"), {}),
        "outer": ((arr, None), {}),
        "nan_to_num": ((arr,), {"nan": "x"}),
        "power": ((arr, "x"), {}),
        "isfinite": ((object(),), {}),
        "cumulative_sum": ((arr,), {"axis": (0, 1)}),
        "nanmean": ((arr,), {"axis": 2}),
        "var": ((arr,), {"ddof": "x"}),
        "std": ((arr,), {"ddof": None, "axis": 5}),
    }
    return fixed.get(name, ((arr,), {"axis": 1.5}))
