"""arrax.experimental.jet (`jax.experimental.jet`): Taylor-mode automatic differentiation."""
from arrax._src.jet import (JetTrace as JetTrace, JetTracer as JetTracer,
                            ZeroSeries as ZeroSeries, ZeroTerm as ZeroTerm, def_comp as def_comp,
                            def_deriv as def_deriv, deriv_prop as deriv_prop,
                            deflinear as deflinear, defzero as defzero, fact as fact, jet as jet,
                            jet2 as jet2, jet_rules as jet_rules, linear_prop as linear_prop,
                            zero_prop as zero_prop, zero_series as zero_series,
                            zero_term as zero_term)
