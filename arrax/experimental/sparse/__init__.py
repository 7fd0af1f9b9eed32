"""arrax.experimental.sparse (`jax.experimental.sparse`): the BCOO, BCSR, COO, CSR and CSC
sparse formats, their primitives and operations, `sparsify`, and sparse-aware autodiff."""
from arrax.experimental.sparse import ad as ad
from arrax.experimental.sparse import api as api
from arrax.experimental.sparse import bcoo as bcoo
from arrax.experimental.sparse import bcsr as bcsr
from arrax.experimental.sparse import coo as coo
from arrax.experimental.sparse import csr as csr
from arrax.experimental.sparse import linalg as linalg
from arrax.experimental.sparse import random as random
from arrax.experimental.sparse import transform as transform
from arrax.experimental.sparse import util as util
from arrax._src.sparse._base import JAXSparse as JAXSparse
from arrax._src.sparse.ad import grad as grad
from arrax._src.sparse.ad import jacfwd as jacfwd
from arrax._src.sparse.ad import jacobian as jacobian
from arrax._src.sparse.ad import jacrev as jacrev
from arrax._src.sparse.ad import value_and_grad as value_and_grad
from arrax._src.sparse.api import empty as empty
from arrax._src.sparse.api import eye as eye
from arrax._src.sparse.api import todense as todense
from arrax._src.sparse.api import todense_p as todense_p
from arrax._src.sparse.bcoo import BCOO as BCOO
from arrax._src.sparse.bcoo import bcoo_broadcast_in_dim as bcoo_broadcast_in_dim
from arrax._src.sparse.bcoo import bcoo_concatenate as bcoo_concatenate
from arrax._src.sparse.bcoo import (
    bcoo_conv_general_dilated as bcoo_conv_general_dilated,
)
from arrax._src.sparse.bcoo import bcoo_dot_general as bcoo_dot_general
from arrax._src.sparse.bcoo import bcoo_dot_general_p as bcoo_dot_general_p
from arrax._src.sparse.bcoo import bcoo_dot_general_sampled as bcoo_dot_general_sampled
from arrax._src.sparse.bcoo import (
    bcoo_dot_general_sampled_p as bcoo_dot_general_sampled_p,
)
from arrax._src.sparse.bcoo import bcoo_dynamic_slice as bcoo_dynamic_slice
from arrax._src.sparse.bcoo import bcoo_extract as bcoo_extract
from arrax._src.sparse.bcoo import bcoo_extract_p as bcoo_extract_p
from arrax._src.sparse.bcoo import bcoo_fromdense as bcoo_fromdense
from arrax._src.sparse.bcoo import bcoo_fromdense_p as bcoo_fromdense_p
from arrax._src.sparse.bcoo import bcoo_gather as bcoo_gather
from arrax._src.sparse.bcoo import bcoo_multiply_dense as bcoo_multiply_dense
from arrax._src.sparse.bcoo import bcoo_multiply_sparse as bcoo_multiply_sparse
from arrax._src.sparse.bcoo import bcoo_reduce_sum as bcoo_reduce_sum
from arrax._src.sparse.bcoo import bcoo_reshape as bcoo_reshape
from arrax._src.sparse.bcoo import bcoo_rev as bcoo_rev
from arrax._src.sparse.bcoo import bcoo_slice as bcoo_slice
from arrax._src.sparse.bcoo import bcoo_sort_indices as bcoo_sort_indices
from arrax._src.sparse.bcoo import bcoo_sort_indices_p as bcoo_sort_indices_p
from arrax._src.sparse.bcoo import bcoo_spdot_general_p as bcoo_spdot_general_p
from arrax._src.sparse.bcoo import bcoo_squeeze as bcoo_squeeze
from arrax._src.sparse.bcoo import bcoo_sum_duplicates as bcoo_sum_duplicates
from arrax._src.sparse.bcoo import bcoo_sum_duplicates_p as bcoo_sum_duplicates_p
from arrax._src.sparse.bcoo import bcoo_todense as bcoo_todense
from arrax._src.sparse.bcoo import bcoo_todense_p as bcoo_todense_p
from arrax._src.sparse.bcoo import bcoo_transpose as bcoo_transpose
from arrax._src.sparse.bcoo import bcoo_transpose_p as bcoo_transpose_p
from arrax._src.sparse.bcoo import bcoo_update_layout as bcoo_update_layout
from arrax._src.sparse.bcsr import BCSR as BCSR
from arrax._src.sparse.bcsr import bcsr_broadcast_in_dim as bcsr_broadcast_in_dim
from arrax._src.sparse.bcsr import bcsr_concatenate as bcsr_concatenate
from arrax._src.sparse.bcsr import bcsr_dot_general as bcsr_dot_general
from arrax._src.sparse.bcsr import bcsr_dot_general_p as bcsr_dot_general_p
from arrax._src.sparse.bcsr import bcsr_extract as bcsr_extract
from arrax._src.sparse.bcsr import bcsr_extract_p as bcsr_extract_p
from arrax._src.sparse.bcsr import bcsr_fromdense as bcsr_fromdense
from arrax._src.sparse.bcsr import bcsr_fromdense_p as bcsr_fromdense_p
from arrax._src.sparse.bcsr import bcsr_sum_duplicates as bcsr_sum_duplicates
from arrax._src.sparse.bcsr import bcsr_todense as bcsr_todense
from arrax._src.sparse.bcsr import bcsr_todense_p as bcsr_todense_p
from arrax._src.sparse.coo import COO as COO
from arrax._src.sparse.coo import coo_fromdense as coo_fromdense
from arrax._src.sparse.coo import coo_fromdense_p as coo_fromdense_p
from arrax._src.sparse.coo import coo_matmat as coo_matmat
from arrax._src.sparse.coo import coo_matmat_p as coo_matmat_p
from arrax._src.sparse.coo import coo_matvec as coo_matvec
from arrax._src.sparse.coo import coo_matvec_p as coo_matvec_p
from arrax._src.sparse.coo import coo_todense as coo_todense
from arrax._src.sparse.coo import coo_todense_p as coo_todense_p
from arrax._src.sparse.csr import CSC as CSC
from arrax._src.sparse.csr import CSR as CSR
from arrax._src.sparse.csr import csr_fromdense as csr_fromdense
from arrax._src.sparse.csr import csr_fromdense_p as csr_fromdense_p
from arrax._src.sparse.csr import csr_matmat as csr_matmat
from arrax._src.sparse.csr import csr_matmat_p as csr_matmat_p
from arrax._src.sparse.csr import csr_matvec as csr_matvec
from arrax._src.sparse.csr import csr_matvec_p as csr_matvec_p
from arrax._src.sparse.csr import csr_todense as csr_todense
from arrax._src.sparse.csr import csr_todense_p as csr_todense_p
from arrax._src.sparse.random import random_bcoo as random_bcoo
from arrax._src.sparse.transform import SparseTracer as SparseTracer
from arrax._src.sparse.transform import sparsify as sparsify
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
)
from arrax._src.sparse.util import SparseEfficiencyError as SparseEfficiencyError
from arrax._src.sparse.util import SparseEfficiencyWarning as SparseEfficiencyWarning
