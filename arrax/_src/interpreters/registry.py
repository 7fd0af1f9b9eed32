"""JAX's rule tables (`ad.primitive_jvps`, `batching.primitive_batchers`, ...) as views of arrax's
rule slots: `table[prim] = rule` registers `rule` with `prim.def_<slot>(rule)`, and reading
`table[prim]` returns the rule in the slot (KeyError if unset)."""
from collections.abc import MutableMapping


class RuleTable(MutableMapping):
  """A mapping from primitives to the rule in one of their slots."""

  def __init__(self, slot, adapt=None):
    self._slot = slot
    self._adapt = adapt          # rule -> rule in arrax's slot convention
    self._set = {}               # primitives registered through this table (for iteration)

  def __setitem__(self, prim, rule):
    getattr(prim, "def_" + self._slot)(rule if self._adapt is None else self._adapt(prim, rule))
    self._set[prim] = rule

  def __getitem__(self, prim):
    if prim in self._set:
      return self._set[prim]     # as registered (before adapting)
    rule = getattr(prim, self._slot, None)
    if not rule:                 # unset: None or core's _MissingRule (falsy)
      raise KeyError(prim)
    return rule

  def __delitem__(self, prim):
    raise TypeError(f"arrax cannot unregister the {self._slot} rule of {prim}")

  def __contains__(self, prim):
    return bool(getattr(prim, self._slot, None))

  def __iter__(self):
    return iter(self._set)

  def __len__(self):
    return len(self._set)

  def __repr__(self):
    return f"<arrax rule table for the '{self._slot}' slot>"
