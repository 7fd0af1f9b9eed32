"""Control flow: cond/switch (conditionals.py), while (while_loop.py), scan and the loops built
on it (loops.py), and the machinery they share (common.py)."""
from arrax._src.lax.control_flow.conditionals import cond, cond_p, switch  # noqa: F401
from arrax._src.lax.control_flow.loops import (associative_scan, fori_loop, map,  # noqa: F401
                                               scan, scan_p, while_loop, while_p)
