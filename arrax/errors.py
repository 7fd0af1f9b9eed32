"""Errors arrax raises (the same classes as jax.errors)."""
from jaxlib._jax import JaxRuntimeError

from arrax._src.errors import (ConcretizationTypeError, JAXIndexError, JAXTypeError,
                               NonConcreteBooleanIndexError, TracerArrayConversionError,
                               TracerBoolConversionError, TracerIntegerConversionError,
                               UnexpectedTracerError)

__all__ = ["ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "JaxRuntimeError",
           "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
