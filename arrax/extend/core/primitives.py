"""arrax.extend.core.primitives (`jax.extend.core.primitives`): the primitives by name.

The typed-key primitives (random_seed_p, random_split_p, random_fold_in_p, random_bits_p) run
their key operation when bound: arrax key arrays wrap uint32 key data, whose operations are
ordinary primitives."""
from arrax._src.ad import (
    stop_gradient_p as stop_gradient_p,
)
from arrax._src.call import (
    call_p as call_p,
    closed_call_p as closed_call_p,
)
from arrax._src.checkpoint import (
    name_p as name_p,
    remat_p as remat_p,
)
from arrax._src.custom_derivatives import (
    custom_jvp_call_p as custom_jvp_call_p,
    custom_lin_p as custom_lin_p,
    custom_vjp_call_p as custom_vjp_call_p,
)
from arrax._src.interpreters.ad import (
    add_jaxvals_p as add_jaxvals_p,
)
from arrax._src.jit import (
    jit_p as jit_p,
)
from arrax._src.lax.ann import (
    approx_top_k_p as approx_top_k_p,
)
from arrax._src.lax.broadcasting import (
    broadcast_in_dim_p as broadcast_in_dim_p,
    iota_p as iota_p,
    reduce_sum_p as reduce_sum_p,
    reshape_p as reshape_p,
    squeeze_p as squeeze_p,
    transpose_p as transpose_p,
)
from arrax._src.lax.control_flow.common import (
    empty2_p as empty2_p,
)
from arrax._src.lax.control_flow.conditionals import (
    cond_p as cond_p,
)
from arrax._src.lax.control_flow.loops import (
    scan_p as scan_p,
)
from arrax._src.lax.control_flow.while_loop import (
    while_p as while_p,
)
from arrax._src.lax.convolution import (
    conv_general_dilated_p as conv_general_dilated_p,
)
from arrax._src.lax.dot import (
    dot_general_p as dot_general_p,
)
from arrax._src.lax.elementwise import (
    abs_p as abs_p,
    acos_p as acos_p,
    acosh_p as acosh_p,
    add_p as add_p,
    and_p as and_p,
    asin_p as asin_p,
    asinh_p as asinh_p,
    atan2_p as atan2_p,
    atan_p as atan_p,
    atanh_p as atanh_p,
    bitcast_convert_type_p as bitcast_convert_type_p,
    cbrt_p as cbrt_p,
    ceil_p as ceil_p,
    clamp_p as clamp_p,
    clz_p as clz_p,
    complex_p as complex_p,
    conj_p as conj_p,
    convert_element_type_p as convert_element_type_p,
    cos_p as cos_p,
    cosh_p as cosh_p,
    digamma_p as digamma_p,
    div_p as div_p,
    eq_p as eq_p,
    erf_inv_p as erf_inv_p,
    erf_p as erf_p,
    erfc_p as erfc_p,
    exp2_p as exp2_p,
    exp_p as exp_p,
    expm1_p as expm1_p,
    floor_p as floor_p,
    ge_p as ge_p,
    gt_p as gt_p,
    imag_p as imag_p,
    integer_pow_p as integer_pow_p,
    is_finite_p as is_finite_p,
    le_p as le_p,
    lgamma_p as lgamma_p,
    log1p_p as log1p_p,
    log_p as log_p,
    logistic_p as logistic_p,
    lt_p as lt_p,
    max_p as max_p,
    min_p as min_p,
    mul_p as mul_p,
    ne_p as ne_p,
    neg_p as neg_p,
    nextafter_p as nextafter_p,
    not_p as not_p,
    or_p as or_p,
    polygamma_p as polygamma_p,
    population_count_p as population_count_p,
    pow_p as pow_p,
    real_p as real_p,
    reduce_precision_p as reduce_precision_p,
    rem_p as rem_p,
    round_p as round_p,
    rsqrt_p as rsqrt_p,
    select_n_p as select_n_p,
    shift_left_p as shift_left_p,
    shift_right_arithmetic_p as shift_right_arithmetic_p,
    shift_right_logical_p as shift_right_logical_p,
    sign_p as sign_p,
    sin_p as sin_p,
    sinh_p as sinh_p,
    sqrt_p as sqrt_p,
    square_p as square_p,
    sub_p as sub_p,
    tan_p as tan_p,
    tanh_p as tanh_p,
    xor_p as xor_p,
)
from arrax._src.lax.fft import (
    fft_p as fft_p,
)
from arrax._src.lax.linalg import (
    cholesky_p as cholesky_p,
    eig_p as eig_p,
    eigh_p as eigh_p,
    householder_product_p as householder_product_p,
    lu_p as lu_p,
    qr_p as qr_p,
    svd_p as svd_p,
    triangular_solve_p as triangular_solve_p,
)
from arrax._src.lax.linalg_schur import (
    hessenberg_p as hessenberg_p,
    schur_p as schur_p,
)
from arrax._src.lax.linalg_extra import (
    tridiagonal_p as tridiagonal_p,
    tridiagonal_solve_p as tridiagonal_solve_p,
)
from arrax._src.lax.parallel import (
    all_gather_p as all_gather_p,
    all_to_all_p as all_to_all_p,
    axis_index_p as axis_index_p,
    pmax_p as pmax_p,
    pmin_p as pmin_p,
    ppermute_p as ppermute_p,
    psum_p as psum_p,
    ragged_all_to_all_p as ragged_all_to_all_p,
)
from arrax._src.lax.reductions import (
    argmax_p as argmax_p,
    argmin_p as argmin_p,
    cumlogsumexp_p as cumlogsumexp_p,
    cummax_p as cummax_p,
    cummin_p as cummin_p,
    cumprod_p as cumprod_p,
    cumsum_p as cumsum_p,
    reduce_and_p as reduce_and_p,
    reduce_max_p as reduce_max_p,
    reduce_min_p as reduce_min_p,
    reduce_or_p as reduce_or_p,
    reduce_p as reduce_p,
    reduce_prod_p as reduce_prod_p,
    reduce_xor_p as reduce_xor_p,
)
from arrax._src.lax.rng import (
    rng_bit_generator_p as rng_bit_generator_p,
    rng_uniform_p as rng_uniform_p,
)
from arrax._src.lax.shape_ops import (
    concatenate_p as concatenate_p,
    dynamic_slice_p as dynamic_slice_p,
    dynamic_update_slice_p as dynamic_update_slice_p,
    pad_p as pad_p,
    rev_p as rev_p,
    slice_p as slice_p,
)
from arrax._src.lax.sharding import (
    device_put_p as device_put_p,
    sharding_constraint_p as sharding_constraint_p,
)
from arrax._src.lax.slicing import (
    gather_p as gather_p,
    scatter_add_p as scatter_add_p,
    scatter_max_p as scatter_max_p,
    scatter_min_p as scatter_min_p,
    scatter_mul_p as scatter_mul_p,
    scatter_p as scatter_p,
)
from arrax._src.lax.solvers import (
    linear_solve_p as linear_solve_p,
)
from arrax._src.lax.sort import (
    sort_p as sort_p,
    top_k_p as top_k_p,
)
from arrax._src.lax.special import (
    bessel_i0e_p as bessel_i0e_p,
    bessel_i1e_p as bessel_i1e_p,
    igamma_grad_a_p as igamma_grad_a_p,
    igamma_p as igamma_p,
    igammac_p as igammac_p,
    regularized_incomplete_beta_p as regularized_incomplete_beta_p,
    zeta_p as zeta_p,
)
from arrax._src.lax.stacking import (
    copy_p as copy_p,
)
from arrax._src.lax.tokens import (
    after_all_p as after_all_p,
    create_token_p as create_token_p,
)
from arrax._src.lax.total_order import (
    eq_to_p as eq_to_p,
    le_to_p as le_to_p,
    lt_to_p as lt_to_p,
)
from arrax._src.lax.windowed_reductions import (
    reduce_window_max_p as reduce_window_max_p,
    reduce_window_min_p as reduce_window_min_p,
    reduce_window_p as reduce_window_p,
    reduce_window_sum_p as reduce_window_sum_p,
    select_and_gather_add_p as select_and_gather_add_p,
    select_and_scatter_add_p as select_and_scatter_add_p,
    select_and_scatter_p as select_and_scatter_p,
)
from arrax._src.prng import (
    random_bits_p as random_bits_p,
    random_fold_in_p as random_fold_in_p,
    random_seed_p as random_seed_p,
    random_split_p as random_split_p,
    threefry2x32_p as threefry2x32_p,
)
from arrax._src.random import (
    random_gamma_p as random_gamma_p,
)
from arrax._src.state.primitives import (
    get_p as get_p,
    swap_p as swap_p,
)
