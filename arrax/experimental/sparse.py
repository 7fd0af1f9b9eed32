"""arrax.experimental.sparse (`jax.experimental.sparse`), so far the batched-COO format: BCOO
arrays, their conversions to and from dense, transposes, sums and contractions."""
from arrax._src.sparse import (
    BCOO as BCOO, bcoo_dot_general as bcoo_dot_general, bcoo_fromdense as bcoo_fromdense,
    bcoo_reduce_sum as bcoo_reduce_sum, bcoo_todense as bcoo_todense,
    bcoo_transpose as bcoo_transpose, empty as empty, eye as eye, todense as todense)
