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
                                        matmul, matrix_transpose, moveaxis, ndim, nonzero,
                                        outer, permute_dims, promote_types, ravel, reshape,
                                        result_type, shape, size, sort, split, squeeze, stack,
                                        swapaxes, take, tensordot, transpose, vdot, vstack,
                                        where, clip)
from arrax._src.numpy.indexing import put_along_axis, take_along_axis
from arrax._src.numpy.padding import pad
from arrax._src.numpy.reductions import (all, amax, amin, any, argmax, argmin, cumprod,
                                         cumsum, cumulative_prod, cumulative_sum, max, mean,
                                         min, prod, std, sum, var)
from arrax._src.numpy.vectorize import vectorize
from arrax._src.numpy.ufuncs import (abs, absolute, acos, acosh, add, angle, arccos, arccosh,
                                     arcsin, arcsinh, arctan, arctan2, arctanh, around, asin,
                                     asinh, atan, atan2, atanh, bitwise_and, bitwise_invert,
                                     bitwise_left_shift, bitwise_not, bitwise_or,
                                     bitwise_right_shift, bitwise_xor, cbrt, ceil, conj,
                                     conjugate, copysign, cos, cosh, deg2rad, degrees, divide,
                                     divmod, equal, exp, exp2, expm1, fabs, fix, float_power,
                                     floor, floor_divide, fmax, fmin, fmod, greater,
                                     greater_equal, heaviside, hypot, imag, invert, isfinite,
                                     isinf, isnan, left_shift, less, less_equal, log, log10,
                                     log1p, log2, logaddexp, logaddexp2, logical_and,
                                     logical_not,
                                     logical_or, logical_xor, maximum, minimum, mod, multiply,
                                     negative, nextafter, not_equal, positive, pow, power,
                                     rad2deg, radians, real, reciprocal, remainder, right_shift,
                                     rint, round, sign, signbit, sin, sinc, sinh, sqrt, square,
                                     subtract, tan, tanh, true_divide, trunc)

# dtypes and scalar types
from arrax._src.numpy.scalar_types import (bfloat16, bool_, complex64, complex128,  # noqa: E402
                                           float16, float32, float64, int8, int16, int32,
                                           int64, uint8, uint16, uint32, uint64)

single, double, csingle, cdouble = float32, float64, complex64, complex128
float_, int_, uint, complex_ = float64, int64, uint64, complex128
float0 = _dtypes.float0
dtype = _np.dtype
generic, number, inexact, floating = _np.generic, _np.number, _np.inexact, _np.floating
integer, signedinteger, unsignedinteger = _np.integer, _np.signedinteger, _np.unsignedinteger
complexfloating, bool = _np.complexfloating, bool_  # noqa: A001
finfo = _dtypes.finfo
iinfo = _dtypes.iinfo
issubdtype = _dtypes.issubdtype
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
from arrax.numpy import linalg  # noqa: E402,F401
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
