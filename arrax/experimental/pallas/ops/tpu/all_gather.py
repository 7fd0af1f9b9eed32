"""arrax.experimental.pallas.ops.tpu.all_gather: a ring all-gather kernel (remote DMAs: runs
on TPU only; see arrax._src.pallas.ops_tpu_all_gather)."""
from arrax._src.pallas.ops_tpu_all_gather import (P as P, ag_kernel as ag_kernel,
                                                  all_gather as all_gather,
                                                  get_neighbor as get_neighbor)
