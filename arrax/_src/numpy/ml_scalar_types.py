"""jnp's scalar types for the ml_dtypes types JAX names beyond bfloat16: 8-, 6- and 4-bit
floats and 1-, 2- and 4-bit integers (`jnp.float8_e4m3fn(1.5)`, `jnp.zeros(3, jnp.int4)`).

They behave as the other scalar types (scalar_types.py). Arrays of float8_e4m3fn,
float8_e4m3fnuz, float8_e4m3b11fnuz, float8_e5m2, float8_e5m2fnuz, int4 and uint4 work; the
other types are named, classified and promoted as in JAX, but making arrays of them raises a
TypeError (arrax has no XLA lowering for them yet).
"""
from __future__ import annotations

import ml_dtypes

from arrax._src.numpy.scalar_types import _scalar_type

float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
int2 = _scalar_type(ml_dtypes.int2)
uint2 = _scalar_type(ml_dtypes.uint2)
int4 = _scalar_type(ml_dtypes.int4)
uint4 = _scalar_type(ml_dtypes.uint4)
# 1-bit integers came with ml_dtypes 0.5.4; JAX names them when ml_dtypes has them.
int1 = _scalar_type(ml_dtypes.int1) if hasattr(ml_dtypes, "int1") else None
uint1 = _scalar_type(ml_dtypes.uint1) if hasattr(ml_dtypes, "uint1") else None
