"""arrax.experimental.pallas.ops.gpu.rms_norm: fused RMS norm and its backward kernels."""
from arrax._src.pallas.ops_gpu_rms_norm import (
    rms_norm as rms_norm, rms_norm_backward as rms_norm_backward,
    rms_norm_backward_kernel_dw_db as rms_norm_backward_kernel_dw_db,
    rms_norm_backward_kernel_dx as rms_norm_backward_kernel_dx,
    rms_norm_forward as rms_norm_forward, rms_norm_forward_kernel as rms_norm_forward_kernel,
    rms_norm_reference as rms_norm_reference)
