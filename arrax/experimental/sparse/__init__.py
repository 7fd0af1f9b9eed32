"""arrax.experimental.sparse (`jax.experimental.sparse`): the BCOO, BCSR, COO, CSR and CSC
sparse formats, their primitives and operations, `sparsify`, and sparse-aware autodiff."""
from arrax._src.sparse import ad as ad
from arrax._src.sparse import api as api
from arrax._src.sparse import bcoo as bcoo
from arrax._src.sparse import bcsr as bcsr
from arrax._src.sparse import coo as coo
from arrax._src.sparse import csr as csr
from arrax._src.sparse import random as random
from arrax._src.sparse import transform as transform
from arrax._src.sparse import util as util
from arrax._src.sparse._base import JAXSparse as JAXSparse
from arrax._src.sparse.ad import (
    grad as grad, jacfwd as jacfwd, jacobian as jacobian, jacrev as jacrev,
    value_and_grad as value_and_grad)
from arrax._src.sparse.api import (
    empty as empty, eye as eye, todense as todense, todense_p as todense_p)
from arrax._src.sparse.bcoo import (
    BCOO as BCOO, bcoo_broadcast_in_dim as bcoo_broadcast_in_dim,
    bcoo_concatenate as bcoo_concatenate, bcoo_conv_general_dilated as bcoo_conv_general_dilated,
    bcoo_dot_general as bcoo_dot_general, bcoo_dot_general_p as bcoo_dot_general_p,
    bcoo_dot_general_sampled as bcoo_dot_general_sampled,
    bcoo_dot_general_sampled_p as bcoo_dot_general_sampled_p,
    bcoo_dynamic_slice as bcoo_dynamic_slice, bcoo_extract as bcoo_extract,
    bcoo_extract_p as bcoo_extract_p, bcoo_fromdense as bcoo_fromdense,
    bcoo_fromdense_p as bcoo_fromdense_p, bcoo_gather as bcoo_gather,
    bcoo_multiply_dense as bcoo_multiply_dense, bcoo_multiply_sparse as bcoo_multiply_sparse,
    bcoo_reduce_sum as bcoo_reduce_sum, bcoo_reshape as bcoo_reshape, bcoo_rev as bcoo_rev,
    bcoo_slice as bcoo_slice, bcoo_sort_indices as bcoo_sort_indices,
    bcoo_sort_indices_p as bcoo_sort_indices_p, bcoo_spdot_general_p as bcoo_spdot_general_p,
    bcoo_squeeze as bcoo_squeeze, bcoo_sum_duplicates as bcoo_sum_duplicates,
    bcoo_sum_duplicates_p as bcoo_sum_duplicates_p, bcoo_todense as bcoo_todense,
    bcoo_todense_p as bcoo_todense_p, bcoo_transpose as bcoo_transpose,
    bcoo_transpose_p as bcoo_transpose_p, bcoo_update_layout as bcoo_update_layout)
from arrax._src.sparse.bcsr import (
    BCSR as BCSR, bcsr_broadcast_in_dim as bcsr_broadcast_in_dim,
    bcsr_concatenate as bcsr_concatenate, bcsr_dot_general as bcsr_dot_general,
    bcsr_dot_general_p as bcsr_dot_general_p, bcsr_extract as bcsr_extract,
    bcsr_extract_p as bcsr_extract_p, bcsr_fromdense as bcsr_fromdense,
    bcsr_fromdense_p as bcsr_fromdense_p, bcsr_sum_duplicates as bcsr_sum_duplicates,
    bcsr_todense as bcsr_todense, bcsr_todense_p as bcsr_todense_p)
from arrax._src.sparse.coo import (
    COO as COO, coo_fromdense as coo_fromdense, coo_fromdense_p as coo_fromdense_p,
    coo_matmat as coo_matmat, coo_matmat_p as coo_matmat_p, coo_matvec as coo_matvec,
    coo_matvec_p as coo_matvec_p, coo_todense as coo_todense, coo_todense_p as coo_todense_p)
from arrax._src.sparse.csr import (
    CSC as CSC, CSR as CSR, csr_fromdense as csr_fromdense, csr_fromdense_p as csr_fromdense_p,
    csr_matmat as csr_matmat, csr_matmat_p as csr_matmat_p, csr_matvec as csr_matvec,
    csr_matvec_p as csr_matvec_p, csr_todense as csr_todense, csr_todense_p as csr_todense_p)
from arrax._src.sparse.random import random_bcoo as random_bcoo
from arrax._src.sparse.transform import SparseTracer as SparseTracer, sparsify as sparsify
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
    SparseEfficiencyError as SparseEfficiencyError,
    SparseEfficiencyWarning as SparseEfficiencyWarning)
