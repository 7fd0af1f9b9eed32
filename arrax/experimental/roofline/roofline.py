"""arrax.experimental.roofline.roofline: the roofline interpreter and rule registry."""
from arrax._src.roofline.roofline import (  # noqa: F401
    RooflineResult as RooflineResult, RooflineRuleContext as RooflineRuleContext,
    RooflineShape as RooflineShape, ShapeDtypeStructTree as ShapeDtypeStructTree,
    Specs as Specs, ValidRooflineDtype as ValidRooflineDtype, _rooflines,
    _roofline_interpreter, register_roofline as register_roofline,
    register_standard_roofline as register_standard_roofline, roofline as roofline,
    roofline_and_grad as roofline_and_grad)
