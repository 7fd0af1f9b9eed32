"""arrax.experimental.pallas.ops.gpu.softmax: a row softmax kernel."""
from arrax._src.pallas.ops_gpu_softmax import softmax as softmax
