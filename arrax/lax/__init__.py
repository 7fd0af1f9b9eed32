"""arrax.lax: the primitive operations, with JAX's signatures."""
from arrax._src.lax.lax import *  # noqa: F401,F403
from arrax._src.lax.lax import RoundingMethod, conj, round  # noqa: F401
from arrax._src.lax.shape_ops import *  # noqa: F401,F403
from arrax._src.lax.dot import *  # noqa: F401,F403
from arrax._src.lax.reductions import *  # noqa: F401,F403
from arrax._src.lax.sort import *  # noqa: F401,F403
from arrax._src.lax.slicing import *  # noqa: F401,F403
from arrax._src.lax.parallel import *  # noqa: F401,F403
from arrax._src.ad import stop_gradient  # noqa: F401
from arrax._src.lax.control_flow import (associative_scan, cond, cond_p, fori_loop,  # noqa: F401
                                         map, scan, scan_p, switch, while_loop, while_p)
from arrax._src.lax.special import (igamma, igamma_grad_a, igamma_grad_a_p, igamma_p,  # noqa: F401
                                    igammac, igammac_p, random_gamma_grad,
                                    random_gamma_grad_p)
from arrax._src.lax.fft import FftType, fft, fft_p  # noqa: F401
from arrax.lax import linalg  # noqa: E402,F401
