"""`jax.experimental.layout`: Layout (the order of an array's dimensions in memory) and Format
(a layout with a sharding). arrax always uses XLA's default row-major layouts; these describe
requests as JAX's classes do."""


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
