"""arrax.typing (`jax.typing`): static type annotations for array arguments and dtypes."""
from arrax._src.typing import ArrayLike as ArrayLike, DTypeLike as DTypeLike
