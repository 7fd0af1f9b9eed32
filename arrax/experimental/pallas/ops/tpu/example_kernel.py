"""arrax.experimental.pallas.ops.tpu.example_kernel: a kernel doubling an array."""
from arrax._src.pallas.ops_tpu_example_kernel import (double as double,
                                                      double_kernel as double_kernel)
