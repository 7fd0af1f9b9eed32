"""`jax.experimental.layout`: Layout (the order of an array's dimensions in memory) and Format
(a layout with a sharding). arrax always uses XLA's default row-major layouts; these describe
requests as JAX's classes do, and `with_layout_constraint` asks XLA for a layout inside a
computation (values are unchanged; arrax arrays keep the default layout)."""
from arrax._src import ad, core, mlir
from arrax._src.array import Array, ArrayType
from arrax._src.batching import flatten_axes
from arrax._src.tree_util import tree_flatten, tree_unflatten


class AutoLayoutSingleton:
  def __repr__(self):
    return "AUTO"


AutoLayout = AutoLayoutSingleton()


class Layout:
  """Dimension order (major to minor), optional tiling and sub-byte element size."""
  AUTO = AutoLayout

  def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits=0):
    self.major_to_minor = tuple(major_to_minor)
    self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
    self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

  def _key(self):
    return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, Layout) and self._key() == other._key()

  def update(self, **kwargs):
    for k in ("major_to_minor", "tiling", "sub_byte_element_size_in_bits"):
      kwargs.setdefault(k, getattr(self, k))
    return Layout(**kwargs)

  def check_compatible_aval(self, aval_shape):
    if len(self.major_to_minor) != len(aval_shape):
      raise ValueError("Length of major_to_minor and the rank of the value should match. Got "
                       f"major_to_minor={self.major_to_minor} and shape={aval_shape}")


class Format:
  """A layout together with a sharding."""
  __slots__ = ("layout", "sharding")

  def __init__(self, layout=None, sharding=None):
    if isinstance(layout, Layout) and sharding is None:
      raise ValueError(
          f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
          "`jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` to the sharding "
          f"argument. Got sharding {sharding}")
    if not isinstance(layout, (Layout, type(None), AutoLayoutSingleton)):
      raise TypeError("Invalid value received for the layout argument. Expected values are "
                      f"`None`, `Layout.AUTO` or an instance of `Layout`. Got {layout} of type "
                      f"{type(layout)}")
    self.layout = layout
    self.sharding = sharding

  def __repr__(self):
    return f"Format(layout={self.layout}, sharding={self.sharding})"

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __eq__(self, other):
    return (isinstance(other, Format) and self.layout == other.layout
            and self.sharding == other.sharding)


# ---- with_layout_constraint --------------------------------------------------------------------
def _check_aval_layouts(layouts, avals, what):
  for aval, layout in zip(avals, layouts):
    if layout is None or isinstance(layout, AutoLayoutSingleton):
      continue
    try:
      layout.check_compatible_aval(aval.shape)
    except ValueError as e:
      raise ValueError(f"One of {what} is incompatible with its layout annotation {layout}: "
                       f"{e}") from None


def with_layout_constraint(x, layouts):
  """`x` (a pytree of arrays) with the memory layout of each leaf constrained to `layouts` (a
  `Layout`, or a tree prefix of `x` of them) inside a computation. Eagerly, the leaves must be
  arrays."""
  leaves, tree = tree_flatten(x)
  avals = [core.get_aval(v) for v in leaves]
  flat_layouts = tuple(flatten_axes("with_layout_constraint layouts", tree, layouts))
  if any(not isinstance(layout, Layout) for layout in flat_layouts):
    raise ValueError("layouts passed to `with_layout_constraint` must be of type `Layout`. Got "
                     f"{[type(layout) for layout in flat_layouts]}")
  _check_aval_layouts(flat_layouts, avals, "with_layout_constraint arguments")
  if core.current_trace() is core.eval_trace:
    for v in leaves:
      if not isinstance(v, (ArrayType, core.Tracer)):
        raise ValueError("with_layout_constraint in eager mode can only be applied to "
                         f"jax.Arrays. Got {type(v)}")
  outs = [layout_constraint_p.bind(v, layout=layout) for v, layout in zip(leaves, flat_layouts)]
  return tree_unflatten(tree, outs)


layout_constraint_p = core.Primitive("layout_constraint")
layout_constraint_p.def_abstract_eval(lambda x, **_: x)


@layout_constraint_p.def_lowering
def _layout_constraint_lowering(ctx, x, *, layout):
  aval_in, = ctx.avals_in
  op = mlir.custom_call("LayoutConstraint", result_types=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                        operands=[x], api_version=1,
                        operand_layouts=[list(range(len(aval_in.shape)))],
                        result_layouts=[layout.major_to_minor[::-1]])
  return [op.result]


ad.deflinear2(layout_constraint_p,
              lambda ct, x, *, layout: [layout_constraint_p.bind(ad.instantiate(ct),
                                                                 layout=layout)])


@layout_constraint_p.def_batch
def _layout_constraint_batch(args, dims, *, layout):
  (x,), (d,) = args, dims
  # The batch axis becomes the major-most dimension; the others keep their order.
  m2m = tuple(m + 1 for m in layout.major_to_minor)
  batched = layout.update(major_to_minor=m2m[:d] + (0,) + m2m[d:])
  return layout_constraint_p.bind(x, layout=batched), d


# ---- Array.format ------------------------------------------------------------------------------
def _array_format(self):
  """The array's device-local layout and its sharding (layout None once deleted)."""
  if self.is_deleted():
    return Format(None, self.sharding)
  buf = self._gbuf if hasattr(self, "_gbuf") else self._buf
  xla_layout = buf._pjrt_layout._xla_layout()
  return Format(Layout(xla_layout.minor_to_major()[::-1], xla_layout.tiling(),
                       xla_layout.element_size_in_bits()), self.sharding)


Array.format = property(_array_format)
