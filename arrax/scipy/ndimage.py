"""arrax.scipy.ndimage, as jax.scipy.ndimage."""
from arrax._src.scipy.ndimage import map_coordinates as map_coordinates  # noqa: F401
