"""Printing jaxprs as text, laid out exactly as JAX prints them.

Naming: variables get the names a, b, ..., z, ba, bb, ... in the order they are first printed,
with one counter shared by the whole text (nested jaxprs included). Equation outputs of the
top-level jaxpr that nothing reads print as `_`. Sub-jaxprs used more than once, or nested
ones with more than ten equations, are printed once up front as `let name = { lambda ... } in`
and referred to by name (their names are never used for variables). For a `jit` equation the
inner jaxpr's inputs and outputs borrow the names of the equation's operands and results.
"""
from __future__ import annotations

import re
from collections import deque
from typing import Any

import numpy as np

from arrax._src import core, pretty_printer as pp
from arrax._src.core import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var

__all__ = ["pp_jaxpr", "pp_eqn", "pp_jaxpr_doc", "pp_eqn_doc", "PpContext"]

WIDTH = 80


def _alphabetic(n: int) -> str:
  """0 -> 'a', 25 -> 'z', 26 -> 'ba', 27 -> 'bb', ... (base 26 with digits a..z)."""
  s = ""
  while True:
    n, r = divmod(n, 26)
    s = chr(ord("a") + r) + s
    if not n:
      return s


class PpContext:
  """Names of variables and shared sub-jaxprs, common to everything in one printed text."""

  def __init__(self, var_names: dict | None = None, source_map: bool = False):
    self.var_names: dict[Var, str] = dict(var_names or {})
    self.source_map = source_map   # attribute each equation's text to its traceback
    self.shared_jaxprs: dict[Jaxpr, str] = {}
    self.shared_names: set[str] = set()
    self._counter = 0

  def _fresh(self) -> str:
    while True:
      name = _alphabetic(self._counter)
      self._counter += 1
      if name not in self.shared_names:
        return name

  def name(self, v: Var) -> str:
    if isinstance(v, DropVar):
      return "_"
    name = self.var_names.get(v)
    if name is None:
      name = self.var_names[v] = self._fresh()
    return name

  def suggest_same_names(self, for_vars, like_vars) -> None:
    """Let the not-yet-named Vars `for_vars` take the names of the aliased `like_vars`."""
    if len(for_vars) != len(like_vars):
      return
    used = set()
    for for_v, like_v in zip(for_vars, like_vars):
      if (isinstance(like_v, Var) and like_v not in used and isinstance(for_v, Var)
          and for_v not in self.var_names):
        used.add(like_v)
        self.var_names[for_v] = self.name(like_v)


# ---- atoms ----------------------------------------------------------------------------------
def _aval_str(aval) -> str:
  return aval.str_short(short_dtypes=True)


def literal_str(lit: Literal, print_dtype: bool = True) -> str:
  val = lit.val
  val_str = "[...]" if np.shape(val) else str(np.asarray(val).item())
  if print_dtype and getattr(lit.aval, "dtype", None) is not None:
    return f"{val_str}:{_aval_str(lit.aval)}"
  return val_str


def _atom_str(v, ctx: PpContext) -> str:
  if isinstance(v, Literal):
    return literal_str(v)
  return ctx.name(v)


def _pp_vars(vs, ctx: PpContext, *, separator: str = "", print_shapes: bool = False) -> pp.Doc:
  # Names are assigned here, in order, so build the items eagerly left to right.
  items = []
  for v in vs:
    s = _atom_str(v, ctx)
    if print_shapes:
      s += ":" + _aval_str(v.aval)
    items.append(pp.text(s))
  return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), items)))


# ---- params -----------------------------------------------------------------------------------
_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


def _pp_param_value(v: Any, ctx: PpContext) -> pp.Doc:
  if type(v) is tuple and all(isinstance(j, (Jaxpr, ClosedJaxpr)) for j in v):
    jaxprs = [j.jaxpr if isinstance(j, ClosedJaxpr) else j for j in v]
    docs = [_pp_jaxpr(j, ctx) for j in jaxprs]
    return pp.group(pp.concat([
        pp.nest(2, pp.concat([pp.text("("), pp.brk(""), pp.join(pp.brk(), docs)])),
        pp.brk(""), pp.text(")")]))
  if isinstance(v, Jaxpr):
    return _pp_jaxpr(v, ctx)
  if isinstance(v, ClosedJaxpr):
    return _pp_jaxpr(v.jaxpr, ctx)
  if isinstance(v, frozenset):
    return pp.text("frozenset({" + ", ".join(repr(e) for e in sorted(v)) + "})")
  s = _ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), str(v))
  return pp.text(s)


def _pp_params(items, ctx: PpContext) -> pp.Doc:
  if not items:
    return pp.nil()
  pairs = [pp.text(f"{k}=") + _pp_param_value(v, ctx) for k, v in items]
  return pp.group(pp.concat([
      pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), pairs)])),
      pp.brk(""), pp.text("]")]))


# ---- equations ------------------------------------------------------------------------------
def _printed_params(eqn: JaxprEqn) -> dict:
  hook = eqn.primitive.pp_params
  params = eqn.params if hook is None else hook(dict(eqn.params))
  return dict(params)


def _is_jit(eqn: JaxprEqn, params) -> bool:
  return eqn.primitive.name == "jit" and isinstance(params.get("jaxpr"), (Jaxpr, ClosedJaxpr))


def _pp_eqn(eqn: JaxprEqn, ctx: PpContext) -> pp.Doc:
  custom = eqn.primitive.pp_eqn
  if custom is not None:
    return custom(eqn, ctx)
  params = _printed_params(eqn)
  keys = sorted(params)
  if _is_jit(eqn, params):
    sub = params["jaxpr"]
    sub = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
    if sub not in ctx.shared_jaxprs:
      ctx.suggest_same_names(sub.invars, eqn.invars)
      ctx.suggest_same_names(sub.outvars, eqn.outvars)
    if "name" in params:
      keys.remove("name")
      keys.insert(0, "name")
  elif getattr(eqn.primitive, "pp_name_first", False) and "name" in params:
    keys.remove("name")   # custom_jvp_call / custom_vjp_call print `name` first, as in JAX
    keys.insert(0, "name")
  # Evaluation order fixes naming order: results, then sub-jaxprs in params, then operands.
  lhs = _pp_vars(eqn.outvars, ctx, print_shapes=True) if eqn.outvars else None
  prim = pp.text(eqn.primitive.name)
  kvs = _pp_params([(k, params[k]) for k in keys], ctx)
  args = pp.text(" ") + _pp_vars(eqn.invars, ctx)
  if lhs is None:
    return pp.concat([prim, kvs, args])
  return pp.concat([lhs, pp.text(" = "), prim, kvs, args])


def _pp_eqns(eqns, ctx: PpContext) -> pp.Doc:
  docs = [_pp_eqn(e, ctx) for e in eqns]
  if ctx.source_map:
    docs = [d if e.traceback is None else pp.source_map(d, e.traceback)
            for d, e in zip(docs, eqns)]
  return pp.join(pp.brk("; "), docs)


# ---- jaxprs ---------------------------------------------------------------------------------
def _pp_skeleton(jaxpr: Jaxpr, ctx: PpContext) -> pp.Doc:
  constvars = _pp_vars(jaxpr.constvars, ctx, print_shapes=True)
  invars = _pp_vars(jaxpr.invars, ctx, print_shapes=True)
  eqns = _pp_eqns(jaxpr.eqns, ctx)
  outvars = pp.concat([pp.text("("), _pp_vars(jaxpr.outvars, ctx, separator=","),
                       pp.text(",)" if len(jaxpr.outvars) == 1 else ")")])
  return pp.group(pp.nest(2, pp.concat([
      pp.text("{ "), pp.text("lambda "), constvars, pp.text("; "), invars,
      pp.text(". "), pp.text("let"), pp.nest(2, pp.brk() + eqns), pp.brk(),
      pp.text("in "), outvars])) + pp.text(" }"))


def _pp_jaxpr(jaxpr: Jaxpr, ctx: PpContext) -> pp.Doc:
  name = ctx.shared_jaxprs.get(jaxpr)
  if name:
    return pp.text(name)
  return _pp_skeleton(jaxpr, ctx)


def _unread_outputs(jaxpr: Jaxpr) -> dict:
  """The top-level equation outputs nothing reads: they print as `_`."""
  names = {}
  used = {v for v in jaxpr.outvars if isinstance(v, Var)}
  for eqn in reversed(jaxpr.eqns):
    for v in eqn.outvars:
      if v not in used:
        names[v] = "_"
    used.update(v for v in eqn.invars if isinstance(v, Var))
  return names


def _find_shared(top: Jaxpr, ctx: PpContext) -> list:
  """Sub-jaxprs to print up front: those met more than once, or nested with > 10 eqns."""
  counts: dict[Jaxpr, int] = {}
  names: dict[Jaxpr, str] = {}
  queue = deque([top])
  while queue:
    jaxpr = queue.popleft()
    counts[jaxpr] = counts.get(jaxpr, 0) + 1
    if jaxpr is not top and len(jaxpr.eqns) > 10:
      counts[jaxpr] += 1
    for eqn in jaxpr.eqns:
      name = eqn.params.get("name")
      subs = core.jaxprs_in_params(eqn.params)
      if eqn.primitive.pp_params is not None:   # (it may show a jaxpr its params hold wrapped)
        subs += [j for j in core.jaxprs_in_params(_printed_params(eqn))
                 if all(j is not k for k in subs)]
      if not isinstance(name, str):
        queue.extend(subs)
        continue
      name = name.strip("<>")
      for sub in subs:
        queue.append(sub)
        names.setdefault(sub, name)

  name_counts: dict[str, int] = {}
  shared = []
  for jaxpr, c in counts.items():
    if c == 1:
      continue
    name = names.get(jaxpr, "jaxpr")
    count = name_counts.get(name, 0)
    name_counts[name] = count + 1
    if count > 0:
      name += str(count)
      name_counts[name] = name_counts.get(name, 0) + 1
    ctx.shared_names.add(name)
    ctx.shared_jaxprs[jaxpr] = name
    shared.append((name, jaxpr))
  return shared


def pp_jaxpr_doc(jaxpr, source_map: bool = False) -> pp.Doc:
  """The document of a top-level jaxpr (a Jaxpr or a ClosedJaxpr); with `source_map`, each
  equation's text is attributed to its traceback."""
  if isinstance(jaxpr, ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  ctx = PpContext(_unread_outputs(jaxpr), source_map)
  shared = _find_shared(jaxpr, ctx)
  docs = []
  for name, sub in shared:
    docs.append(pp.concat([pp.text("let "), pp.text(name), pp.text(" = "),
                           _pp_skeleton(sub, ctx), pp.text(" in"), pp.brk()]))
  docs.append(_pp_jaxpr(jaxpr, ctx))
  return pp.concat(docs)


def pp_jaxpr(jaxpr, width: int = WIDTH, source_map: list | None = None) -> str:
  """The text of a jaxpr, as JAX prints it. With a list `source_map`, one list per line of
  (start column, end column, traceback) spans of the equations' text is appended to it."""
  return pp_jaxpr_doc(jaxpr, source_map is not None).format(width, source_map=source_map)


def pp_eqn_doc(eqn: JaxprEqn, ctx: PpContext | None = None) -> pp.Doc:
  return _pp_eqn(eqn, PpContext() if ctx is None else ctx)


def pp_eqn(eqn: JaxprEqn, width: int = WIDTH) -> str:
  """The text of one equation on its own (fresh names), as JAX's `repr(eqn)` gives it."""
  return pp_eqn_doc(eqn).format(width).rstrip()


core.register_printer(pp_jaxpr, pp_eqn)
