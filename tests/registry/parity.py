"""Comparing a compiled typed-column decoder with the reference: values and problems."""

from __future__ import annotations

import math
import struct
from typing import Any

import pyarrow as pa

from kafka_format.registry.typed import ColumnDecoder


def same(a: Any, b: Any) -> bool:
    """Equal values, floats compared by their bits (NaN and -0.0 included)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def unordered_maps(t: pa.DataType, v: Any) -> Any:
    """A value of type ``t`` with every map's entries sorted by key (Protobuf leaves the order of a
    map undefined: upb iterates its hash table, in an order that changes between processes)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: unordered_maps(f.type, v[f.name]) for f in t}
    if pa.types.is_map(t):
        return sorted(((k, unordered_maps(t.item_type, x)) for k, x in v), key=lambda kv: repr(kv[0]))
    if pa.types.is_list(t):
        return [unordered_maps(t.value_type, x) for x in v]
    return v


def check_parity(fast: ColumnDecoder, ref: ColumnDecoder, arr: pa.Array, *,
                 maps_ordered: bool = True) -> tuple[list[Any], list[Any]]:
    """The compiled decoder ``fast`` gives the reference's values, type and problems on ``arr``;
    returns them (values as Python objects)."""
    got, got_problems = fast.decode(arr)
    want, want_problems = ref.decode(arr)
    assert got.type == want.type
    values = g = got.to_pylist()
    w = want.to_pylist()
    if not maps_ordered:
        g = [unordered_maps(got.type, v) for v in g]
        w = [unordered_maps(want.type, v) for v in w]
    assert same(g, w), (g, w)
    assert got_problems == want_problems
    return values, got_problems
