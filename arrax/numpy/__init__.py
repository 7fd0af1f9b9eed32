"""arrax.numpy: NumPy's API on arrax arrays (computed by XLA, traceable, jittable)."""
import numpy as _np

from arrax._src import dtypes as _dtypes
from arrax._src.array import ArrayType as ndarray
from arrax._src.numpy import array_methods as _array_methods  # noqa: F401  (installs operators)
from arrax._src.numpy.creation import (arange, array, asarray, empty, empty_like, eye, full,
                                       full_like, identity, linspace, ones, ones_like, zeros,
                                       zeros_like)
from arrax._src.numpy.lax_numpy import (argsort, astype, atleast_1d, atleast_2d, broadcast_arrays,
                                        broadcast_shapes, broadcast_to, can_cast, concat,
                                        concatenate, dot, expand_dims, flip, fliplr, flipud,
                                        hstack, inner, iscomplexobj, isrealobj, isscalar,
                                        matmul, matrix_transpose, moveaxis, ndim,
                                        outer, permute_dims, promote_types, ravel, reshape,
                                        result_type, shape, size, sort, squeeze, stack,
                                        swapaxes, tensordot, transpose, vdot, vstack,
                                        clip)
from arrax._src.numpy.array_api_metadata import (
    __array_api_version__ as __array_api_version__,
    __array_namespace_info__ as __array_namespace_info__)
from arrax._src.numpy.indexing import put_along_axis, take, take_along_axis
from arrax._src.numpy.padding import pad
from arrax._src.numpy.reductions import (all, amax, amin, any, argmax, argmin, cumprod,
                                         cumsum, cumulative_prod, cumulative_sum, max, mean,
                                         min, prod, std, sum, var)
from arrax._src.numpy.vectorize import vectorize
from arrax._src.numpy.ufuncs import (
    abs, absolute, acos, acosh, angle, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
    around, asin, asinh, atan, atan2, atanh, bitwise_invert, bitwise_left_shift, bitwise_not,
    bitwise_right_shift, cbrt, ceil, conj, conjugate, copysign, cos, cosh, deg2rad, degrees,
    divide, divmod, equal, exp, exp2, expm1, fabs, fix, float_power, floor, floor_divide, fmax,
    fmin, fmod, greater, greater_equal, heaviside, hypot, imag, invert, isfinite, isinf, isnan,
    left_shift, less, less_equal, log, log10, log1p, log2, logical_not, mod, nextafter, not_equal,
    positive, pow, power, rad2deg, radians, real, reciprocal, remainder, right_shift, rint, round,
    sign, signbit, sin, sinc, sinh, sqrt, square, tan, tanh, true_divide, trunc)
# The binary ufuncs and negative are jnp.ufunc objects (reduce, accumulate, at, reduceat,
# outer), as in JAX.
from arrax._src.numpy.ufunc_api import (  # noqa: E402
    add as add, bitwise_and as bitwise_and, bitwise_or as bitwise_or,
    bitwise_xor as bitwise_xor, frompyfunc as frompyfunc, logaddexp as logaddexp,
    logaddexp2 as logaddexp2, logical_and as logical_and, logical_or as logical_or,
    logical_xor as logical_xor, maximum as maximum, minimum as minimum, multiply as multiply,
    negative as negative, subtract as subtract, ufunc as ufunc)

# dtypes and scalar types
from arrax._src.numpy.scalar_types import (bfloat16, bool_, complex64, complex128,  # noqa: E402
                                           float16, float32, float64, int8, int16, int32,
                                           int64, uint8, uint16, uint32, uint64)

single, double, csingle, cdouble = float32, float64, complex64, complex128
float_, int_, uint, complex_ = float64, int64, uint64, complex128

dtype = _np.dtype
generic, number, inexact, floating = _np.generic, _np.number, _np.inexact, _np.floating
integer, signedinteger, unsignedinteger = _np.integer, _np.signedinteger, _np.unsignedinteger
complexfloating, bool = _np.complexfloating, bool_  # noqa: A001
finfo = _dtypes.finfo
iinfo = _dtypes.iinfo


def issubdtype(arg1, arg2) -> bool:
  """np.issubdtype, knowing arrax's extra dtypes (bfloat16, float8, int4, PRNG keys)."""
  return _dtypes.issubdtype(arg1, arg2)


pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
from arrax.numpy import linalg  # noqa: E402,F401
from arrax._src.numpy.einsum import (einsum as einsum, einsum_path as einsum_path)  # noqa: E402
from arrax._src.numpy.searching import (  # noqa: E402
    argpartition as argpartition, argwhere as argwhere, bincount as bincount, choose as choose,
    compress as compress, count_nonzero as count_nonzero, digitize as digitize,
    extract as extract, flatnonzero as flatnonzero, lexsort as lexsort, nonzero as nonzero,
    partition as partition, piecewise as piecewise, place as place, put as put,
    ravel_multi_index as ravel_multi_index, searchsorted as searchsorted, select as select,
    sort_complex as sort_complex, unravel_index as unravel_index, where as where)
from arrax._src.numpy.setops import (  # noqa: E402
    allclose as allclose, array_equal as array_equal, array_equiv as array_equiv,
    intersect1d as intersect1d, iscomplex as iscomplex, isclose as isclose, isdtype as isdtype,
    isin as isin, isneginf as isneginf, isposinf as isposinf, isreal as isreal,
    iterable as iterable, nan_to_num as nan_to_num, setdiff1d as setdiff1d,
    setxor1d as setxor1d, spacing as spacing, union1d as union1d, unique as unique,
    unique_all as unique_all, unique_counts as unique_counts, unique_inverse as unique_inverse,
    unique_values as unique_values)
# np-stats: statistics, NaN reductions, polynomials, windows and other math functions
from arrax._src.numpy.nanreductions import (  # noqa: E402
    nanargmax as nanargmax, nanargmin as nanargmin, nancumprod as nancumprod,
    nancumsum as nancumsum, nanmax as nanmax, nanmean as nanmean, nanmedian as nanmedian,
    nanmin as nanmin, nanpercentile as nanpercentile, nanprod as nanprod,
    nanquantile as nanquantile, nanstd as nanstd, nansum as nansum, nanvar as nanvar)
from arrax._src.numpy.statistics import (  # noqa: E402
    average as average, convolve as convolve, corrcoef as corrcoef, correlate as correlate,
    cov as cov, diff as diff, ediff1d as ediff1d, gradient as gradient, histogram as histogram,
    histogram2d as histogram2d, histogram_bin_edges as histogram_bin_edges,
    histogramdd as histogramdd, interp as interp, median as median, percentile as percentile,
    ptp as ptp, quantile as quantile, trapezoid as trapezoid, unwrap as unwrap)
from arrax._src.numpy.polynomial import (  # noqa: E402
    poly as poly, polyadd as polyadd, polyder as polyder, polydiv as polydiv,
    polyfit as polyfit, polyint as polyint, polymul as polymul, polysub as polysub,
    polyval as polyval, roots as roots)
from arrax._src.numpy.math_extra import (  # noqa: E402
    bartlett as bartlett, bitwise_count as bitwise_count, blackman as blackman, frexp as frexp,
    gcd as gcd, geomspace as geomspace, hamming as hamming, hanning as hanning, i0 as i0,
    kaiser as kaiser, lcm as lcm, ldexp as ldexp, logspace as logspace, modf as modf)
from arrax._src.numpy.assembly import (  # noqa: E402
    append as append, apply_along_axis as apply_along_axis, apply_over_axes as apply_over_axes,
    array_split as array_split, atleast_3d as atleast_3d, block as block,
    column_stack as column_stack, copy as copy, delete as delete, dsplit as dsplit, split as split,
    dstack as dstack, fromfunction as fromfunction, hsplit as hsplit, insert as insert,
    repeat as repeat, resize as resize, roll as roll, rollaxis as rollaxis, rot90 as rot90,
    tile as tile, trim_zeros as trim_zeros, unstack as unstack, vsplit as vsplit)
from arrax._src.numpy.index_tricks import (  # noqa: E402
    array_repr as array_repr, array_str as array_str, c_ as c_, cross as cross, diag as diag,
    diag_indices as diag_indices, diag_indices_from as diag_indices_from, diagflat as diagflat,
    diagonal as diagonal, fill_diagonal as fill_diagonal, from_dlpack as from_dlpack,
    frombuffer as frombuffer, fromiter as fromiter, fromstring as fromstring,
    get_printoptions as get_printoptions, index_exp as index_exp, indices as indices, ix_ as ix_,
    kron as kron, mask_indices as mask_indices, matvec as matvec, meshgrid as meshgrid,
    mgrid as mgrid, ogrid as ogrid, packbits as packbits, printoptions as printoptions, r_ as r_,
    s_ as s_, set_printoptions as set_printoptions, trace as trace, tri as tri, tril as tril,
    tril_indices as tril_indices, tril_indices_from as tril_indices_from, triu as triu,
    triu_indices as triu_indices, triu_indices_from as triu_indices_from,
    unpackbits as unpackbits, vander as vander, vecdot as vecdot, vecmat as vecmat)
from arrax.numpy import fft as fft  # noqa: E402,F401
# ml_dtypes scalar types beyond bfloat16 (float8/6/4 and 1/2/4-bit integers)
from arrax._src.numpy.ml_scalar_types import (  # noqa: E402
    float4_e2m1fn as float4_e2m1fn, float6_e2m3fn as float6_e2m3fn,
    float6_e3m2fn as float6_e3m2fn, float8_e3m4 as float8_e3m4, float8_e4m3 as float8_e4m3,
    float8_e4m3b11fnuz as float8_e4m3b11fnuz, float8_e4m3fn as float8_e4m3fn,
    float8_e4m3fnuz as float8_e4m3fnuz, float8_e5m2 as float8_e5m2,
    float8_e5m2fnuz as float8_e5m2fnuz, float8_e8m0fnu as float8_e8m0fnu, int2 as int2,
    int4 as int4, uint2 as uint2, uint4 as uint4)
from arrax._src.numpy import ml_scalar_types as _ml_scalar_types  # noqa: E402
if _ml_scalar_types.int1 is not None:   # ml_dtypes >= 0.5.4, as in JAX
  from arrax._src.numpy.ml_scalar_types import int1 as int1, uint1 as uint1  # noqa: E402
# host I/O through NumPy's formats, and NumPy's own classes and warnings, as jax.numpy has them
from arrax._src.numpy.host_io import fromfile as fromfile, load as load  # noqa: E402
from numpy import (  # noqa: E402
    character as character, flexible as flexible, object_ as object_, save as save,
    savez as savez)
from numpy.exceptions import ComplexWarning as ComplexWarning  # noqa: E402
