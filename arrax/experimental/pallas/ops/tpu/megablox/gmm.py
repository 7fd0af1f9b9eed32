"""arrax.experimental.pallas.ops.tpu.megablox.gmm: the grouped matmul kernels `gmm`, `tgmm`."""
from arrax._src.pallas.ops_tpu_megablox import (GroupMetadata as GroupMetadata, LutFn as LutFn,
                                                gmm as gmm,
                                                make_group_metadata as make_group_metadata,
                                                tgmm as tgmm)
from arrax.experimental.pallas.ops.tpu.megablox import common as common  # noqa: F401
