"""Image resampling (jax.image): resize, scale_and_translate and ResizeMethod."""
from arrax._src.image.scale import (
    ResizeMethod as ResizeMethod,
    resize as resize,
    scale_and_translate as scale_and_translate,
)
