"""Errors arrax raises, with JAX's classes and hints that say what to do instead."""

_ERROR_PAGE = "https://docs.jax.dev/en/latest/errors.html"


class _ArraxErrorMixin:
  def __init__(self, message: str):
    super().__init__(f"{message}\nSee {_ERROR_PAGE}#jax.errors.{type(self).__name__}")


class JAXTypeError(_ArraxErrorMixin, TypeError):
  """arrax-specific TypeError."""


class JAXIndexError(_ArraxErrorMixin, IndexError):
  """arrax-specific IndexError."""


def _describe(tracer):
  name = getattr(tracer, "_debug_name", None)
  base = f"traced array with shape {tracer.aval.str_short()}"
  if name:
    base += f"\nThis value became a tracer due to JAX operations on these lines: the argument '{name}'"
  return base


_HINT = ("\nIf this happens under jax.jit, mark the argument static with `static_argnums` or "
         "`static_argnames`, or express the data-dependent logic with `jnp.where` or "
         "`lax.cond`.")


class ConcretizationTypeError(JAXTypeError):
  """A tracer was used where a concrete value is required."""

  def __init__(self, tracer, context: str = ""):
    super().__init__("Abstract tracer value encountered where concrete value is expected: "
                     f"{_describe(tracer)}\n{context}{_HINT}\n")


class NonConcreteBooleanIndexError(JAXIndexError):
  """A boolean mask whose values are not known at trace time was used as an index."""

  def __init__(self, tracer):
    super().__init__(
        f"Array boolean indices must be concrete; got {tracer}\n"
        "Under jit the shape of x[mask] would depend on the values of mask. Use "
        "`jnp.where(mask, x, fill)` to keep the shape static, or a size= argument.")


class TracerArrayConversionError(JAXTypeError):
  """A tracer was converted to a NumPy array (for example by a NumPy function)."""

  def __init__(self, tracer):
    super().__init__(
        f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}. "
        "Use arrax.numpy functions instead of numpy functions on traced values.")


class TracerIntegerConversionError(JAXTypeError):
  """A tracer was used where a Python int is required (an index, a shape, range())."""

  def __init__(self, tracer, method="__index__"):
    super().__init__(f"The {method}() method was called on {_describe(tracer)}.{_HINT}")


class TracerBoolConversionError(ConcretizationTypeError):
  """A tracer was used where a Python bool is required (`if`, `while`, `and`, `or`)."""

  def __init__(self, tracer):
    JAXTypeError.__init__(
        self, f"Attempted boolean conversion of {_describe(tracer)}.\nPython control flow "
        "cannot depend on a traced value: use `jnp.where` or `lax.cond` for data-dependent "
        "branches, or mark the argument static with `static_argnums`.")


class UnexpectedTracerError(JAXTypeError):
  """A tracer escaped the transformation that created it."""

  def __init__(self, msg: str):
    super().__init__(msg)


class KeyReuseError(JAXTypeError):
  """A PRNG key was consumed more than once (the key-reuse checker's error)."""


class JaxprTypeError(TypeError):
  """A jaxpr is ill-typed: a variable used before it is defined or bound twice, or an
  equation whose declared output types differ from its primitive's rule (`enable_checks`)."""


class InconclusiveDimensionOperation(Exception):
  """A comparison or arithmetic on symbolic dimensions (jax.export shape polymorphism) whose
  result the shape constraints do not determine."""



def type_mismatch_details(a, b) -> str:
  """', so the dtypes do not match' (and/or shapes, manual axis types) for two avals, for type-error messages."""
  parts = []
  if a.dtype != b.dtype:
    parts.append("the dtypes do not match")
  if a.shape != b.shape:
    parts.append("the shapes do not match")
  if getattr(a, "vma", frozenset()) != getattr(b, "vma", frozenset()):
    parts.append("the manual axis types do not match")
  if not parts:
    return ""
  return ", so " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1])
