"""arrax.experimental.pallas.ops.tpu.megablox.ops: `gmm` with its VJP (through `gmm` and
`tgmm`)."""
from arrax.experimental.pallas.ops.tpu.megablox import gmm as _kernels  # noqa: F401
from arrax._src.pallas.ops_tpu_megablox import ops_gmm as gmm  # noqa: E402
