"""arrax.lax: the primitive operations, with JAX's signatures."""
from arrax._src.lax.lax import *  # noqa: F401,F403
from arrax._src.lax.lax import RoundingMethod, conj, round  # noqa: F401
from arrax._src.lax.shape_ops import *  # noqa: F401,F403
from arrax._src.lax.dot import *  # noqa: F401,F403
from arrax._src.lax.reductions import *  # noqa: F401,F403
from arrax._src.lax.sort import *  # noqa: F401,F403
from arrax._src.lax.slicing import *  # noqa: F401,F403
from arrax._src.ad import stop_gradient  # noqa: F401
