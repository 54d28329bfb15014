"""``functx.numpy``: NumPy's API with JAX's semantics (promotion, immutability), traceable."""

from functx.numpy import linalg
from functx.numpy._core import (  # noqa: F401
    abs, absolute, acos, acosh, add, all, amax, amin, any, arange, arccos, arccosh, arcsin,
    arcsinh, arctan, arctan2, arctanh, argmax, argmin, around, array, array_split, asarray, asin,
    asinh, astype, atan, atan2, atanh, atleast_1d, atleast_2d, atleast_3d, average, bfloat16,
    bitwise_and, bitwise_invert, bitwise_not, bitwise_or, bitwise_xor, bool_, broadcast_arrays,
    broadcast_shapes, broadcast_to, cbrt, ceil, clip, column_stack, concat, concatenate, copysign,
    cos, cosh, count_nonzero, cumprod, cumsum, cumulative_prod, cumulative_sum, deg2rad, degrees,
    diag, diagonal, divide, divmod, dot, dstack, dtype, e, einsum, empty, empty_like, equal,
    euler_gamma, exp, exp2, expand_dims, expm1, eye, finfo, fix, flip, fliplr, flipud, float16,
    float32, float64, float_, float_power, floating, floor, floor_divide, fmax, fmin, fmod, full,
    full_like, generic, greater, greater_equal, heaviside, hsplit, hstack, hypot, identity, iinfo,
    inexact, inf, inner, int16, int32, int64, int8, int_, integer, invert, isfinite, isinf, isnan,
    isneginf, isposinf, issubdtype, kron, less, less_equal, linspace, log, log10, log1p, log2,
    logaddexp, logaddexp2, logical_and, logical_not, logical_or, logical_xor, matmul,
    matrix_transpose, max, maximum, mean, meshgrid, min, minimum, mod, moveaxis, multiply, nan,
    nan_to_num, nanmax, nanmean, nanmin, nansum, ndarray, ndim, negative, newaxis, nextafter,
    not_equal, number, ones, ones_like, outer, pad, permute_dims, pi, positive, pow, power, prod,
    promote_types, ptp, rad2deg, radians, ravel, reciprocal, remainder, repeat, reshape,
    result_type, rint, roll, round, row_stack, shape, sign, signbit, signedinteger, sin, sinc,
    sinh, size, split, sqrt, square, squeeze, stack, std, subtract, sum, swapaxes, take,
    take_along_axis, tan, tanh, tensordot, tile, trace, transpose, tri, tril, triu, true_divide,
    trunc, uint16, uint32, uint64, uint8, unsignedinteger, var, vdot, vecdot, vsplit, vstack,
    where, zeros, zeros_like,
)
from functx.numpy._core import stack_nested  # noqa: F401  (used by Array)

__all__ = ["linalg", "abs", "absolute", "acos", "acosh", "add", "all", "amax", "amin", "any", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "around", "array", "array_split", "asarray", "asin", "asinh", "astype", "atan", "atan2", "atanh", "atleast_1d", "atleast_2d", "atleast_3d", "average", "bfloat16", "bitwise_and", "bitwise_invert", "bitwise_not", "bitwise_or", "bitwise_xor", "bool_", "broadcast_arrays", "broadcast_shapes", "broadcast_to", "cbrt", "ceil", "clip", "column_stack", "concat", "concatenate", "copysign", "cos", "cosh", "count_nonzero", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "deg2rad", "degrees", "diag", "diagonal", "divide", "divmod", "dot", "dstack", "dtype", "e", "einsum", "empty", "empty_like", "equal", "euler_gamma", "exp", "exp2", "expand_dims", "expm1", "eye", "finfo", "fix", "flip", "fliplr", "flipud", "float16", "float32", "float64", "float_", "float_power", "floating", "floor", "floor_divide", "fmax", "fmin", "fmod", "full", "full_like", "generic", "greater", "greater_equal", "heaviside", "hsplit", "hstack", "hypot", "identity", "iinfo", "inexact", "inf", "inner", "int16", "int32", "int64", "int8", "int_", "integer", "invert", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "issubdtype", "kron", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "matrix_transpose", "max", "maximum", "mean", "meshgrid", "min", "minimum", "mod", "moveaxis", "multiply", "nan", "nan_to_num", "nanmax", "nanmean", "nanmin", "nansum", "ndarray", "ndim", "negative", "newaxis", "nextafter", "not_equal", "number", "ones", "ones_like", "outer", "pad", "permute_dims", "pi", "positive", "pow", "power", "prod", "promote_types", "ptp", "rad2deg", "radians", "ravel", "reciprocal", "remainder", "repeat", "reshape", "result_type", "rint", "roll", "round", "row_stack", "shape", "sign", "signbit", "signedinteger", "sin", "sinc", "sinh", "size", "split", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace", "transpose", "tri", "tril", "triu", "true_divide", "trunc", "uint16", "uint32", "uint64", "uint8", "unsignedinteger", "var", "vdot", "vecdot", "vsplit", "vstack", "where", "zeros", "zeros_like"]
