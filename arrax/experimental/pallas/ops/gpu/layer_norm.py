"""arrax.experimental.pallas.ops.gpu.layer_norm: fused layer norm and its backward kernels."""
from arrax._src.pallas.ops_gpu_layer_norm import (
    layer_norm as layer_norm, layer_norm_backward as layer_norm_backward,
    layer_norm_backward_kernel_dw_db as layer_norm_backward_kernel_dw_db,
    layer_norm_backward_kernel_dx as layer_norm_backward_kernel_dx,
    layer_norm_forward as layer_norm_forward,
    layer_norm_forward_kernel as layer_norm_forward_kernel,
    layer_norm_reference as layer_norm_reference)
