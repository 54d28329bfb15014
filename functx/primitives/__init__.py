"""The closed primitive set: shape/dtype inference and the NumPy implementation of each.

Primitives are grouped by class (``Primitive.group``): unary, binary, compare, bitwise, select,
convert, reduce, shape, index, contract, special. Transforms and backends give rules per group
where the mathematics allows, and coverage tests check that every primitive has each rule.
Everything in ``functx.numpy``, ``functx.nn`` and ``functx.lax`` is a composite of these.

- ``base``: the registry (``registry``, ``prim``, ``by_group``) and shared helpers;
- ``elementwise``: ONE row per unary/binary/compare/bitwise op (``ROWS``): NumPy implementation,
  dtype kinds, derivative, C++ and Triton spellings, interpreter stand-in, cost class;
  plus select_n and convert_element_type;
- ``reduce``: the reduction-semantics table (``SEMANTICS``, ``ARG``: identities, combine, NaN,
  signed-zero and tie rules) and the reduction primitives;
- ``shape``, ``index``, ``contract``: views, iota, stop_gradient; gather/scatter and dynamic
  slices; dot_general;
- ``bitcast``: bitcast_convert_type (the same bits as another dtype).

Every primitive object is available here as ``<name>_p`` (``functx.primitives.sin_p``).
"""

from functx.primitives.base import by_group as by_group, prim as prim, registry as registry
from functx.primitives.bitcast import *  # noqa: F403
from functx.primitives.contract import *  # noqa: F403
from functx.primitives.elementwise import *  # noqa: F403 (one <name>_p per table row)
from functx.primitives.index import *  # noqa: F403
from functx.primitives.reduce import *  # noqa: F403
from functx.primitives.shape import *  # noqa: F403
