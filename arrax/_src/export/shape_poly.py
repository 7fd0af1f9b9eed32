"""Symbolic dimensions (`jax.export.symbolic_shape`): enough to read and call exported modules
with shape polymorphism.

A dimension expression is a polynomial with integer coefficients over atoms: dimension
variables ("b") and the non-polynomial operations JAX writes (floordiv, mod, max, min,
non_negative). Expressions that are constants become plain ints. arrax's tracer has no
symbolic shapes, so exporting a function with symbolic input shapes is not supported; calling
a module exported (by JAX) with them is: the dimension variables are solved from the actual
argument shapes.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import api, batching, core, dtypes, errors, mlir, tree_util

_FUNCS = ("floordiv", "mod", "max", "min", "non_negative")


class InconclusiveDimensionOperation(errors.InconclusiveDimensionOperation):
  """A comparison of symbolic dimensions whose answer depends on the variables' values."""


class _Atom:
  """A dimension variable (op "var", args (name,)) or an operation on expressions."""
  __slots__ = ("op", "args", "_key")

  def __init__(self, op, args):
    self.op, self.args = op, tuple(args)
    self._key = (op, self.args)

  def __eq__(self, other):
    return type(other) is _Atom and self._key == other._key

  def __hash__(self):
    return hash(self._key)

  def __str__(self):
    if self.op == "var":
      return self.args[0]
    return f"{self.op}({', '.join(str(a) for a in self.args)})"

  def evaluate(self, env):
    if self.op == "var":
      try:
        return env[self.args[0]]
      except KeyError:
        raise KeyError(f"Encountered dimension variable '{self.args[0]}' that is not "
                       "appearing in the shapes of the function arguments") from None
    vals = [_evaluate(a, env) for a in self.args]
    if self.op == "floordiv":
      return vals[0] // vals[1]
    if self.op == "mod":
      return vals[0] % vals[1]
    if self.op == "max":
      return max(vals)
    if self.op == "min":
      return min(vals)
    return max(vals[0], 0)   # non_negative


def _evaluate(e, env):
  return e.evaluate(env) if isinstance(e, _DimExpr) else int(e)


def _exact_quotient(num, den):
  """num / den when den (an int or a one-term expression) divides every term of num exactly,
  else None."""
  if isinstance(den, int):
    if den == 0:
      raise ZeroDivisionError("division by zero in a symbolic dimension")
    den_m, den_c = (), den
  else:
    if len(den._terms) != 1:
      return None
    (den_m, den_c), = den._terms.items()
  den_pow = dict(den_m)
  out = {}
  for m, c in _as_terms(num).items():
    powers = dict(m)
    if c % den_c or any(powers.get(a, 0) < p for a, p in den_pow.items()):
      return None
    for a, p in den_pow.items():
      powers[a] -= p
    key = tuple(sorted(((a, p) for a, p in powers.items() if p), key=lambda ap: str(ap[0])))
    out[key] = out.get(key, 0) + c // den_c
  return _normalize(out)


def _normalize(terms):
  """An int if the polynomial `terms` ({monomial: coeff}) is constant, else a _DimExpr."""
  terms = {m: c for m, c in terms.items() if c != 0}
  if not terms:
    return 0
  if set(terms) == {()}:
    return terms[()]
  return _DimExpr(terms)


def _as_terms(x):
  if isinstance(x, _DimExpr):
    return x._terms
  return {(): int(x)}


class _DimExpr:
  """A symbolic dimension: sum of coeff * product of atoms ** power."""
  __slots__ = ("_terms", "_hash", "scope")
  _symbolic_dim = True   # how lower layers (mlir) recognize a symbolic dimension

  def __init__(self, terms, scope=None):
    # monomial: tuple of (atom, power) sorted by str(atom)
    self._terms = dict(terms)
    self._hash = None
    self.scope = scope

  # -- arithmetic
  def __add__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return NotImplemented
    out = dict(self._terms)
    for m, c in _as_terms(other).items():
      out[m] = out.get(m, 0) + c
    return _normalize(out)

  __radd__ = __add__

  def __neg__(self):
    return _normalize({m: -c for m, c in self._terms.items()})

  def __sub__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return NotImplemented
    return self + (-other)

  def __rsub__(self, other):
    return (-self) + other

  def __mul__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return NotImplemented
    out = {}
    for m1, c1 in self._terms.items():
      for m2, c2 in _as_terms(other).items():
        powers = dict(m1)
        for a, p in m2:
          powers[a] = powers.get(a, 0) + p
        m = tuple(sorted(powers.items(), key=lambda ap: str(ap[0])))
        out[m] = out.get(m, 0) + c1 * c2
    return _normalize(out)

  __rmul__ = __mul__

  def __truediv__(self, other):
    return self.__jax_array__() / other

  def __rtruediv__(self, other):
    return other / self.__jax_array__()

  def __jax_array__(self):
    """The size as a value (a weakly typed default-int scalar) while tracing for export."""
    return dim_as_value_p.bind(dim=self)

  def __floordiv__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return self.__jax_array__() // other
    q = _exact_quotient(self, other)
    return q if q is not None else _normalize({((_Atom("floordiv", (self, other)), 1),): 1})

  def __rfloordiv__(self, other):
    if not isinstance(other, int):
      return other // self.__jax_array__()
    return _normalize({((_Atom("floordiv", (other, self)), 1),): 1})

  def __mod__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return self.__jax_array__() % other
    if _exact_quotient(self, other) is not None:
      return 0
    return _normalize({((_Atom("mod", (self, other)), 1),): 1})

  def __rmod__(self, other):
    if not isinstance(other, int):
      return other % self.__jax_array__()
    return _normalize({((_Atom("mod", (other, self)), 1),): 1})

  # -- comparison: structural equality; ordering decided by bounds (variables are >= 1)
  def __hash__(self):
    if self._hash is None:
      self._hash = hash(tuple(sorted((str(_DimExpr({m: 1})), c)
                                     for m, c in self._terms.items())))
    return self._hash

  def _bounds(self):
    """(lower, upper) bounds of the value, with every dimension variable >= 1 and the
    non-polynomial atoms (floordiv, mod, ...) >= 0."""
    lo = hi = 0
    for m, c in self._terms.items():
      if not m:
        lo, hi = lo + c, hi + c
        continue
      at_least = 1 if all(a.op == "var" for a, _ in m) else 0
      if c > 0:
        lo, hi = lo + c * at_least, float("inf")
      else:
        lo, hi = float("-inf"), hi + c * at_least
    return lo, hi

  def _ge(self, other, strict, op_str, left, right):
    lo, hi = _bounds_of(self - other)
    k = 1 if strict else 0     # self - other >= k ?
    if lo >= k:
      return True
    if hi < k:
      return False
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison '{left}' {op_str} '{right}' is inconclusive.\n"
        + _INCONCLUSIVE)

  def __ge__(self, other):
    return self._ge(other, False, ">=", self, other)

  def __gt__(self, other):
    return self._ge(other, True, ">", self, other)

  def __le__(self, other):
    return _as_expr(other)._ge(self, False, "<=", self, other)

  def __lt__(self, other):
    return _as_expr(other)._ge(self, True, "<", self, other)

  def __eq__(self, other):
    if not isinstance(other, (int, _DimExpr)):
      return NotImplemented
    return _as_terms(other) == self._terms

  def __ne__(self, other):
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq

  def __int__(self):
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension '{self}' used in a context that requires a constant\n"
        + _INCONCLUSIVE)

  def __index__(self):
    return self.__int__()

  # -- evaluation and printing
  def evaluate(self, env) -> int:
    """The value with the variables' values from `env` (ints, or anything with + * // %)."""
    total = None
    for m, c in self._terms.items():
      v = None
      for a, p in m:
        f = a.evaluate(env)
        f = f ** p if p != 1 else f
        v = f if v is None else v * f
      v = c if v is None else (v if c == 1 else c * v)
      total = v if total is None else total + v
    return total

  def as_var(self):
    """The variable's name if this expression is exactly one dimension variable, else None."""
    if len(self._terms) == 1:
      (m, c), = self._terms.items()
      if c == 1 and len(m) == 1 and m[0][1] == 1 and m[0][0].op == "var":
        return m[0][0].args[0]
    return None

  def variables(self):
    out = []
    for m in self._terms:
      for a, _ in m:
        if a.op == "var":
          out.append(a.args[0])
        else:
          for x in a.args:
            if isinstance(x, _DimExpr):
              out.extend(x.variables())
    return out

  def __str__(self):
    def mono_str(m, c):
      factors = [str(a) if p == 1 else f"{a}^{p}" for a, p in m]
      if not factors:
        return str(abs(c))
      body = "*".join(factors)
      return body if abs(c) == 1 else f"{abs(c)}*{body}"

    def order(mc):   # JAX's order: higher degree first, then larger factors (operations
      m = mc[0]      # above variables, variables in reverse alphabetical order)
      factors = sorted(((a.op != "var", str(a)) for a, _ in m), reverse=True)
      return (sum(p for _, p in m), factors)

    mons = sorted((mc for mc in self._terms.items() if mc[0]), key=order, reverse=True)
    mons += [mc for mc in self._terms.items() if not mc[0]]
    out = ""
    for i, (m, c) in enumerate(mons):
      s = mono_str(m, c)
      if i == 0:
        out = s if c > 0 else f"- {s}"
      else:
        out += f" + {s}" if c > 0 else f" - {s}"
    return out

  __repr__ = __str__


_INCONCLUSIVE = (
    "This error arises for comparison operations with shapes that\nare non-constant, and the "
    "result of the operation cannot be represented as\na boolean value for all values of the "
    "symbolic dimensions involved.\n\nPlease see https://docs.jax.dev/en/latest/export/"
    "shape_poly.html#comparison-of-symbolic-dimensions-is-partially-supported\nfor more "
    "details.\n")


def _as_expr(x):
  return x if isinstance(x, _DimExpr) else _DimExpr({(): int(x)})


def _bounds_of(x):
  return (x, x) if isinstance(x, int) else x._bounds()


# A symbolic size used as a value (`x.sum() / x.shape[0]`): lowered from the dimension
# variables' values, which main reads from its arguments' sizes.
dim_as_value_p = core.Primitive("dim_as_value")


@dim_as_value_p.def_abstract_eval
def _dim_as_value_abstract_eval(*, dim):
  return core.ShapedArray((), dtypes.default_int_dtype(), weak_type=True)


@dim_as_value_p.def_lowering
def _dim_as_value_lowering(ctx, *, dim):
  v = mlir.dim_value(dim)
  out_t = mlir.aval_to_ir_type(ctx.avals_out[0])
  return [v if v.type == out_t else hlo.convert(out_t, v)]


@dim_as_value_p.def_batch
def _dim_as_value_batch(args, dims, *, dim):
  return dim_as_value_p.bind(dim=dim), batching.not_mapped


def is_symbolic_dim(p) -> bool:
  """Whether `p` is a symbolic dimension expression."""
  return isinstance(p, _DimExpr)


class SymbolicScope:
  """The scope of a set of symbolic dimensions and the constraints among them (recorded;
  arrax checks only that dimension variables are >= 1)."""

  def __init__(self, constraints_str: Sequence[str] = ()):
    if isinstance(constraints_str, str):
      raise ValueError("The symbolic constraints should be a sequence of strings. "
                       f"Got {constraints_str!r}")
    self.constraints_str = tuple(constraints_str)

  def __str__(self):
    return f"SymbolicScope({list(self.constraints_str)})"

  __repr__ = __str__


# ---- parsing ---------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\.\.\.)|(.))")


def _tokenize(s):
  toks = []
  pos = 0
  s = s.rstrip()
  while pos < len(s):
    m = _TOKEN.match(s, pos)
    if m is None:
      break
    pos = m.end()
    num, name, dots, other = m.groups()
    if num is not None:
      toks.append(("int", int(num)))
    elif name is not None:
      toks.append(("name", name))
    elif dots is not None:
      toks.append(("op", "..."))
    elif other is not None and other.strip():
      toks.append(("op", other))
  return toks


class _Parser:
  def __init__(self, spec, scope, like):
    self.spec, self.scope, self.like = spec, scope, like
    self.toks = _tokenize(spec)
    self.i = 0

  def error(self, msg):
    return ValueError(f"syntax error in symbolic shape: '{self.spec}' {msg}")

  def peek(self):
    return self.toks[self.i] if self.i < len(self.toks) else ("end", None)

  def take(self, kind=None, val=None):
    tok = self.peek()
    if (kind and tok[0] != kind) or (val is not None and tok[1] != val):
      raise self.error(f"at position {self.i}: expected {val or kind}, found {tok[1]!r}")
    self.i += 1
    return tok

  def shape(self):
    spec = self.spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
      self.toks = _tokenize(spec[1:-1])
    dims = []
    while self.peek()[0] != "end":
      tok = self.peek()
      if tok == ("op", "..."):
        self.take()
        if self.like is None:
          raise self.error("'...' requires the 'like' argument")
        dims.extend(self.like[len(dims):len(self.like) - self._rest_count()])
      elif tok == ("name", "_"):
        self.take()
        if self.like is None or len(dims) >= len(self.like) or self.like[len(dims)] is None:
          raise self.error("'_' requires a known dimension in the 'like' argument")
        dims.append(self.like[len(dims)])
      else:
        dims.append(self.expr())
      if self.peek()[0] == "end":
        break
      self.take("op", ",")
    return tuple(dims)

  def _rest_count(self):
    n, depth = 0, 0
    for kind, v in self.toks[self.i:]:
      if (kind, v) == ("op", "("):
        depth += 1
      elif (kind, v) == ("op", ")"):
        depth -= 1
      elif (kind, v) == ("op", ",") and depth == 0:
        n += 1
    return n

  def expr(self):
    e = self.term()
    while self.peek() in (("op", "+"), ("op", "-")):
      op = self.take()[1]
      t = self.term()
      e = e + t if op == "+" else e - t
    return e

  def term(self):
    e = self.factor()
    while self.peek() == ("op", "*"):
      self.take()
      e = e * self.factor()
    return e

  def factor(self):
    kind, val = self.peek()
    if kind == "int":
      self.take()
      return val
    if (kind, val) == ("op", "-"):
      self.take()
      return -self.factor()
    if (kind, val) == ("op", "("):
      self.take()
      e = self.expr()
      self.take("op", ")")
      return e
    if kind == "name":
      self.take()
      if val in _FUNCS and self.peek() == ("op", "("):
        self.take()
        args = [self.expr()]
        while self.peek() == ("op", ","):
          self.take()
          args.append(self.expr())
        self.take("op", ")")
        e = _normalize({((_Atom(val, args), 1),): 1})
      else:
        e = _DimExpr({((_Atom("var", (val,)), 1),): 1}, self.scope)
      if self.peek() == ("op", "^"):
        self.take()
        e = _pow(e, self.take("int")[1])
      return e
    raise self.error(f"at position {self.i}: unexpected {val!r}")


def _pow(e, n):
  out = 1
  for _ in range(n):
    out = out * e
  return out


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> Sequence[Any]:
  """A shape (tuple of ints and symbolic dimensions) parsed from a string like "b, 4"."""
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot specify both a `scope` and `constraints`.")
  if shape_spec is None:
    shape_spec = "..."
  if not isinstance(shape_spec, str):
    raise ValueError(f"polymorphic shape spec should be None or a string. Found {shape_spec!r}.")
  dims = _Parser(shape_spec, scope, like).shape()
  if like is not None and len(dims) != len(like):
    raise ValueError(f"syntax error in symbolic shape: '{shape_spec}' rank mismatch: the "
                     f"shape has rank {len(dims)} but 'like' has rank {len(like)}")
  return dims


def symbolic_args_specs(args, shapes_specs, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None):
  """ShapeDtypeStructs with symbolic shapes for the pytree `args`: `shapes_specs` is one spec
  string for every leaf, or a pytree prefix of `args` of spec strings (None: the leaf's own
  shape)."""
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot use both `scope` and `constraints`")
  leaves, tree = tree_util.tree_flatten(args)
  if shapes_specs is None or isinstance(shapes_specs, str):
    specs = [shapes_specs] * len(leaves)
  else:
    specs = tree_util.tree_leaves(tree_util.tree_broadcast(
        shapes_specs, args, is_leaf=lambda x: x is None or isinstance(x, str)),
        is_leaf=lambda x: x is None)
  out = []
  for leaf, spec in zip(leaves, specs):
    shape, dtype = np.shape(leaf), getattr(leaf, "dtype", None)
    if dtype is None:
      dtype = np.asarray(leaf).dtype
    out.append(api.ShapeDtypeStruct(symbolic_shape(spec, like=shape, scope=scope), dtype))
  return tree_util.tree_unflatten(tree, out)


def all_dim_vars(avals) -> list[str]:
  """The dimension variables of `avals`, sorted."""
  names = set()
  for a in avals:
    for d in a.shape:
      if isinstance(d, _DimExpr):
        names.update(d.variables())
  return sorted(names)
