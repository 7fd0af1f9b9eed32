"""arrax.scipy.spatial.transform, as jax.scipy.spatial.transform."""
from arrax._src.scipy.spatial.transform import Rotation as Rotation, Slerp as Slerp  # noqa: F401
