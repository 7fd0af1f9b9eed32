"""arrax.experimental.roofline.rooflines: importing it registers the primitives' rules."""
from arrax._src.roofline.rooflines import _FMA_FLOPS as _FMA_FLOPS_FACTOR  # noqa: F401
