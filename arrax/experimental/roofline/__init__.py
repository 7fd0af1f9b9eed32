"""arrax.experimental.roofline (`jax.experimental.roofline`): flops, memory and interconnect
traffic estimated from a function's jaxpr."""
# (through the submodule, so that importing it later does not rebind `roofline`)
from arrax.experimental.roofline.roofline import (
    RooflineResult as RooflineResult, RooflineRuleContext as RooflineRuleContext,
    RooflineShape as RooflineShape, register_roofline as register_roofline,
    register_standard_roofline as register_standard_roofline, roofline as roofline,
    roofline_and_grad as roofline_and_grad)
import arrax.experimental.roofline.rooflines as rooflines  # registers the rules

del rooflines
