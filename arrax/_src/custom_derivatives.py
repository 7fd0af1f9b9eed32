"""User-defined derivative rules: custom_jvp, custom_vjp, closure_convert.

A `custom_jvp` / `custom_vjp` function called under a trace is traced to a jaxpr (`call_jaxpr`,
its closed-over values lifted to leading inputs: `num_consts`) and bound as the primitive
`custom_jvp_call` / `custom_vjp_call`, whose params also carry the user's rules (wrapped to work
on flat lists, with JAX's checks). Called eagerly (no transformation), the function simply runs.

* custom_jvp_call: its JVP runs the user's rule; under partial evaluation with unknown inputs
  it is inlined (only linear functions are built that way, as in JAX).
* custom_vjp_call: its JVP runs `fwd` now and binds `custom_lin` on the tangents, a linear
  primitive holding `bwd` and the residuals; `custom_lin` is transposed by calling `bwd`, and
  evaluating it (forward mode only) is an error, as in JAX.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

import numpy as np

from arrax._src import ad, core, dtypes, mlir, tracing
from arrax._src.ad import Zero
from arrax._src.errors import UnexpectedTracerError, type_mismatch_details
from arrax._src.tree_util import (keystr, tree_flatten, tree_flatten_with_path, tree_leaves,
                                  tree_map, tree_unflatten)
from arrax._src import batching
from arrax._src.array import device_put_value
from arrax._src.lax import reductions
from arrax._src.lax.elementwise import _convert_element_type
from arrax._src.remat_opt import _memoize, remat_opt_fwd
from arrax._src.tracing import JitTracer
from arrax._src.tracing import trace_to_jaxpr

__all__ = ["custom_jvp", "custom_vjp", "closure_convert", "linear_call", "SymbolicZero",
           "zero_from_primal", "CustomVJPPrimal", "custom_vjp_primal_tree_values", "custom_gradient"]


# ---- helpers ----------------------------------------------------------------------------------
def _fun_name(fun, default="<unnamed function>"):
  while isinstance(fun, functools.partial):
    fun = fun.func
  return getattr(fun, "__name__", default)


class SymbolicZero:
  """A zero tangent/cotangent passed to rules defined with `symbolic_zeros=True`.

  Carries only the type (`aval`, `shape`, `dtype`); it is not an array.
  """

  def __init__(self, aval):
    self.aval = aval

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def __bool__(self):
    return False

  def __repr__(self):
    return f"SymbolicZero({self.aval.str_short()})"


def zero_from_primal(val, symbolic_zeros=False):
  """Zero tangents shaped like the pytree `val` (symbolic ones if `symbolic_zeros`)."""
  def zero(x):
    aval = ad.tangent_aval(core.get_aval(x))
    return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return tree_map(zero, val)


@dataclasses.dataclass
class CustomVJPPrimal:
  """An argument of a `fwd` rule defined with `symbolic_zeros=True`: the primal `value`
  and whether it is `perturbed` (involved in differentiation)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree):
  """Strip the `CustomVJPPrimal` records of a symbolic-zeros `fwd` rule's arguments."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_map(value, tree)


class CustomVJPException(Exception):
  def __init__(self):
    super().__init__(
        "Detected differentiation of a custom_vjp function with respect to a closed-over "
        "value. That isn't supported because the custom VJP rule only specifies how to "
        "differentiate the custom_vjp function with respect to explicit input parameters. "
        "Pass the closed-over value into the custom_vjp function as an argument, and adapt "
        "the custom_vjp fwd and bwd rules to it.")


def _resolve_kwargs(fun, args, kwargs, kind, name):
  """Arguments as a positional tuple, following `fun`'s signature (defaults applied)."""
  if isinstance(fun, functools.partial):
    sig = inspect.signature(lambda *a, **k: None)   # a partial's signature is opaque
  else:
    try:
      sig = inspect.signature(fun)
    except (TypeError, ValueError):
      sig = inspect.signature(lambda *a, **k: None)
  try:
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    passed = [k for k in bound.kwargs if k in kwargs]
    if passed:
      raise TypeError("The following keyword arguments could not be resolved to positions: "
                      f"{', '.join(passed)}")
  except TypeError as e:
    raise TypeError(f"The input arguments to the {kind}-decorated function {name} could not be "
                    f"resolved to positional-only arguments. Binding failed with the error:\n"
                    f"{e}") from e
  return tuple(bound.args)


def _user(x):
  """A value handed to user code: internal scalar Literals become arrays (with their type)."""
  if type(x) is core.Literal:
    return device_put_value(x.val, None, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return x


def _users(xs):
  return [_user(x) for x in xs]


def _stop_gradient_tracers(x):
  return tree_map(lambda v: ad.stop_gradient_p.bind(v) if isinstance(v, core.Tracer) else v, x)


def _split_nondiff(fun, nondiff, args):
  """(fun of the differentiable args, those args, the non-differentiable args)."""
  if not nondiff:
    return fun, tuple(args), ()
  n = len(args)
  for i in nondiff:
    if i >= n:
      raise TypeError(f"nondiff_argnums contains index {i}, but the function was called with "
                      f"only {n} positional arguments.")
  dyn_idx = [i for i in range(n) if i not in nondiff]
  static = [args[i] for i in nondiff]

  def dyn_fun(*dyn):
    full = list(args)
    for i, x in zip(dyn_idx, dyn):
      full[i] = x
    return fun(*full)
  return dyn_fun, tuple(args[i] for i in dyn_idx), tuple(static)


def _trace_call(fun, leaves, in_tree):
  """Trace `fun` at the types of `leaves`: (closed jaxpr taking consts first, consts, out_tree).

  Every value the function closes over (outer tracers and concrete arrays alike) becomes a
  leading input, as JAX's `num_consts` inputs.
  """
  box = []

  def flat(*xs):
    out = fun(*tree_unflatten(in_tree, xs))
    out_leaves, out_tree = tree_flatten(out)
    box.append(out_tree)
    for x in out_leaves:
      core.get_aval(x)   # a TypeError for non-array outputs
    return out_leaves

  avals = [core.get_aval(x) for x in leaves]
  jaxpr, consts = trace_to_jaxpr(flat, avals)
  return core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []), list(consts), box[0]


def _tree_types(tree, avals):
  return str(tree_unflatten(tree, [a.str_short() for a in avals])).replace("'", "")


def _typematch(a, b, vma=False):
  """Equal shapes and dtypes (and, with `vma`, varying manual axes)."""
  return a.shape == b.shape and a.dtype == b.dtype and (not vma or a.vma == b.vma)


def _call_jaxpr_impl(*args, call_jaxpr, **_):
  return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _call_jaxpr_lowering(ctx, *args, call_jaxpr, **_):
  consts = [mlir.ir_constant(np.asarray(c, v.aval.dtype))
            for v, c in zip(call_jaxpr.jaxpr.constvars, call_jaxpr.consts)]
  return mlir.jaxpr_subcomp(ctx.module_context, call_jaxpr.jaxpr, consts, list(args))


def _call_jaxpr_inline_partial_eval(trace, args, params):
  # Partial evaluation with unknown inputs only builds linear functions: the custom rule is not
  # needed there, so the function's own jaxpr is evaluated on the partial-evaluation trace.
  closed = params["call_jaxpr"]
  with core.set_current_trace(trace):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _call_jaxpr_transpose(cts, *args, call_jaxpr, **_):
  cts_in = ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))
  return [ct if ad.is_undefined(x) else None for x, ct in zip(args, cts_in)]


# ---- custom_jvp -------------------------------------------------------------------------------
class _JvpRule:
  """The user's JVP rule on flat lists: (primals, tangents) -> (primals_out, tangents_out).

  Checks the rule's output as JAX does; symbolic zeros in the output become `ad.Zero`.
  """

  def __init__(self, rule, static_args, in_tree, out_tree, out_avals, primal_name):
    self.rule = rule
    self.static_args = static_args
    self.in_tree = in_tree
    self.out_tree = out_tree
    self.out_avals = out_avals
    self.primal_name = primal_name
    self.name = _fun_name(rule)

  def __str__(self):
    return self.name

  def __call__(self, primals, tangents):
    py_primals = tree_unflatten(self.in_tree, _users(primals))
    py_tangents = tree_unflatten(self.in_tree, _users(tangents))
    pair = self.rule(*self.static_args, py_primals, py_tangents)
    where = f"Custom JVP rule {self.name} for function {self.primal_name}"
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
      raise TypeError(f"{where} must produce a pair (list or tuple of length two) representing "
                      f"primal and tangent outputs, but got {pair}.")
    p_out, p_tree = tree_flatten(pair[0])
    is_zero = lambda x: type(x) in (Zero, SymbolicZero)
    t_out, t_tree = tree_flatten(pair[1], is_leaf=is_zero)
    if p_tree != t_tree:
      raise TypeError(f"{where} must produce primal and tangent outputs with equal container "
                      f"(pytree) structures, but got {p_tree} and {t_tree} respectively.")
    p_avals = [core.get_aval(x) for x in p_out]
    if p_tree != self.out_tree:
      raise TypeError(
          f"{where} must produce a pair (list or tuple of length two) where the first element "
          "represents the primal output (equal in value to the output of the "
          f"custom_jvp-decorated function {self.primal_name}, and in particular of the same "
          "container/pytree structure), but instead the JVP rule output's first element had "
          f"container/pytree structure:\n    {_tree_types(p_tree, p_avals)}\nwhile the "
          f"custom_jvp-decorated function {self.primal_name} had output container/pytree "
          f"structure:\n    {_tree_types(self.out_tree, self.out_avals)}.")
    if not all(map(_typematch, p_avals, self.out_avals)):
      raise TypeError(
          f"{where} must produce a pair (list or tuple of length two) where the first element "
          "represents the primal output (equal in value to the output of the "
          f"custom_jvp-decorated function {self.primal_name}, and in particular with leaves of "
          "the same shape/dtype), but instead the JVP rule output's first element had "
          f"shapes/dtypes of:\n    {_tree_types(p_tree, p_avals)}\nwhile the custom_jvp-decorated"
          f" function {self.primal_name} had output shapes/dtypes of:\n    "
          f"{_tree_types(self.out_tree, self.out_avals)}")
    expected = [ad.tangent_aval(a.strip_weak_type()) for a in p_avals]
    got = [t.aval if is_zero(t) else core.get_aval(t) for t in t_out]
    bad = [(p, e, g) for p, e, g in zip(p_avals, expected, got) if not _typematch(e, g)]
    if bad:
      if len(expected) == 1:
        p, e, g = bad[0]
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {e.str_short()} (tangent "
                        f"type of {p.str_short()}) but got {g.str_short()}.")
      lines = "\n".join(f"  primal {p.str_short()} with tangent {g.str_short()}, expecting "
                        f"tangent {e.str_short()}" for p, e, g in bad)
      raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                      f"corresponding shapes and dtypes, but got:\n{lines}")
    t_res = []
    for t, e in zip(t_out, expected):
      if is_zero(t) or ad.is_float0(e):
        t_res.append(Zero(e))
      else:
        t_res.append(t)
    return p_out, t_res


custom_jvp_call_p = core.Primitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True
custom_jvp_call_p.pp_name_first = True
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals))
custom_jvp_call_p.def_impl(_call_jaxpr_impl)
custom_jvp_call_p.def_lowering(_call_jaxpr_lowering)
custom_jvp_call_p.def_partial_eval(_call_jaxpr_inline_partial_eval)
custom_jvp_call_p.def_transpose(_call_jaxpr_transpose)


def _custom_jvp_call_pp(params):
  out = {"name": params["fun_name"], "call_jaxpr": params["call_jaxpr"], "jvp": params["jvp"],
         "symbolic_zeros": params["symbolic_zeros"]}
  if params["num_consts"]:
    out["num_consts"] = params["num_consts"]
  return out


custom_jvp_call_p.def_pp_params(_custom_jvp_call_pp)


def _closed_over_tangent_error(kind):
  return UnexpectedTracerError(
      f"A {kind} function closes over a value that is being differentiated (a tracer of the "
      f"enclosing transformation). Derivatives with respect to closed-over values are not "
      f"defined by the custom rule: pass the value to the {kind} function as an explicit "
      "argument (or use jax.closure_convert).")


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros,
                         fun_name):
  if any(type(t) is not Zero for t in tangents[:num_consts]):
    raise _closed_over_tangent_error("custom_jvp")
  primals, tangents = primals[num_consts:], tangents[num_consts:]
  if symbolic_zeros:
    tangents = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
  else:
    tangents = [ad.instantiate(t) for t in tangents]
  return jvp(list(primals), list(tangents))


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)


class _CustomFunction:
  """What custom_jvp and custom_vjp share: the wrapped function and its non-differentiable
  argument positions (`nondiff_argnames` resolved to positions)."""

  def __init__(self, fun, nondiff_argnums, nondiff_argnames):
    functools.update_wrapper(self, fun)
    self.fun = fun
    nums = set(nondiff_argnums)
    if nondiff_argnames:
      params = list(inspect.signature(fun).parameters)
      nums.update(params.index(n) for n in nondiff_argnames if n in params)
    self.nondiff_argnums = tuple(sorted(nums))
    self.symbolic_zeros = False

  def __getattr__(self, name):
    # Attributes of the wrapped function (e.g. for methods defined on a decorated function).
    if name == "fun":
      raise AttributeError(name)
    return getattr(self.fun, name)


class custom_jvp(_CustomFunction):
  """A function with a custom JVP rule, used by every differentiation transformation.

  Example:
    >>> @custom_jvp
    ... def f(x, y):
    ...   return jnp.sin(x) * y
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...   x, y = primals
    ...   x_dot, y_dot = tangents
    ...   return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
  """

  def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
    super().__init__(fun, nondiff_argnums, nondiff_argnames)
    self.jvp = None

  def defjvp(self, jvp, symbolic_zeros=False):
    """Define the JVP rule `jvp(primals, tangents) -> (primal_out, tangent_out)` (with
    `nondiff_argnums`, the non-differentiable arguments come first). Returns `jvp`."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps):
    """One JVP function per argument: `jvp_i(tangent_i, primal_out, *primals)` (None for an
    argument the output does not depend on); their contributions are summed."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      zeros = tree_map(lambda x: Zero(ad.tangent_aval(core.get_aval(x))), primal_out)
      parts = [fn(t, primal_out, *primals) if fn else zeros for t, fn in zip(tangents, jvps)]
      is_zero = lambda x: type(x) is Zero
      flat_parts = [tree_flatten(p, is_leaf=is_zero)[0] for p in parts]
      out_leaves, out_tree = tree_flatten(primal_out)
      summed = []
      for i in range(len(out_leaves)):
        acc = flat_parts[0][i]
        for p in flat_parts[1:]:
          acc = ad.add_tangents(acc, p[i])
        summed.append(acc)
      return primal_out, tree_unflatten(out_tree, summed)

    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if not self.jvp:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
    args = _resolve_kwargs(self.fun, args, kwargs, "custom_jvp", name)
    if self.nondiff_argnums:
      args = tuple(_stop_gradient_tracers(x) if i in self.nondiff_argnums else x
                   for i, x in enumerate(args))
    fun, dyn_args, static_args = _split_nondiff(self.fun, self.nondiff_argnums, args)
    if core.trace_ctx.trace is core.eval_trace:
      return fun(*dyn_args)
    leaves, in_tree = tree_flatten(dyn_args)
    closed, consts, out_tree = _trace_call(fun, leaves, in_tree)
    rule = _JvpRule(self.jvp, static_args, in_tree, out_tree,
                    closed.out_avals, name)
    outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=closed, jvp=rule,
                                  num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                  fun_name=name)
    return tree_unflatten(out_tree, outs)


# ---- custom_vjp -------------------------------------------------------------------------------
class _FwdRule:
  """The user's fwd rule on flat lists: (primals, nonzeros) -> (residuals, res_tree, outs)."""

  def __init__(self, fwd, in_tree, out_tree, out_avals, symbolic_zeros, primal_name, fwd_name):
    self.fwd = fwd
    self.in_tree = in_tree
    self.out_tree = out_tree
    self.out_avals = out_avals
    self.symbolic_zeros = symbolic_zeros
    self.primal_name = primal_name
    self.name = fwd_name

  def __str__(self):
    return self.name

  def __call__(self, primals, nonzeros):
    primals = _users(primals)
    if self.symbolic_zeros:
      primals = [CustomVJPPrimal(x, nz) for x, nz in zip(primals, nonzeros)]
    pair = self.fwd(*tree_unflatten(self.in_tree, primals))
    where = f"Custom VJP fwd rule {self.name} for function {self.primal_name}"
    head = (f"{where} must produce a pair (list or tuple of length two) where the first "
            "element represents the primal output (equal to the output of the "
            f"custom_vjp-decorated function {self.primal_name}) and the second element "
            "represents residuals (i.e. values stored from the forward pass for use on the "
            "backward pass), but ")
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
      raise TypeError(f"{head.replace('equal to the output of', 'equal to those of')}instead "
                      f"of a pair the fwd rule {self.name} produced {pair}.")
    outs, out_tree = tree_flatten(pair[0])
    res, res_tree = tree_flatten(pair[1])
    avals = [core.get_aval(x) for x in outs]
    if out_tree != self.out_tree:
      raise TypeError(
          f"{head}instead the fwd rule output's first element had container/pytree "
          f"structure:\n    {_tree_types(out_tree, avals)}\nwhile the custom_vjp-decorated "
          f"function {self.primal_name} had output container/pytree structure:\n    "
          f"{_tree_types(self.out_tree, self.out_avals)}.")
    if not all(map(_typematch, avals, self.out_avals)):
      raise TypeError(
          f"{head}instead the fwd rule output's first element had shapes/dtypes of:\n    "
          f"{_tree_types(out_tree, avals)}\nwhile the custom_vjp-decorated function "
          f"{self.primal_name} had output shapes/dtypes of:\n    "
          f"{_tree_types(self.out_tree, self.out_avals)}")
    for r in res:
      try:
        core.get_aval(r)
      except TypeError:
        raise TypeError(f"{where}: residuals must be arrays (or pytrees of arrays), got "
                        f"{r!r}; keep non-array values out of the residuals (e.g. close over "
                        "them or use nondiff_argnums).") from None
    return res, res_tree, outs


class _BwdRule:
  """The user's bwd rule on flat lists: (residuals, res_tree, cts_out) -> one cotangent per
  primal input leaf (`Zero` where the rule gives None), with JAX's structure/type checks."""

  def __init__(self, bwd, static_args, in_tree, in_avals, out_tree, primal_name):
    self.bwd = bwd
    self.static_args = static_args
    self.in_tree = in_tree
    self.in_avals = in_avals
    self.out_tree = out_tree
    self.primal_name = primal_name
    self.name = _fun_name(bwd)

  def __str__(self):
    return self.name

  def __call__(self, res, res_tree, cts):
    py_res = tree_unflatten(res_tree, _users(res))
    py_cts = tree_unflatten(self.out_tree, _users(cts))
    out = self.bwd(*self.static_args, py_res, py_cts)
    n_args = self.in_tree.num_children if hasattr(self.in_tree, "num_children") else len(
        self.in_tree.children())
    if isinstance(out, list) and len(out) == n_args:
      out = tuple(out)
    dummy = tree_unflatten(self.in_tree, [object()] * self.in_tree.num_leaves)
    paths = [p for p, _ in tree_flatten_with_path(dummy)[0]]
    missing = object()
    flat = []

    def collect(ct, sub):
      n = len(tree_leaves(sub))
      flat.extend([missing if ct is None else ct] * n)
      return ct
    try:
      if not isinstance(out, tuple):
        raise ValueError
      tree_map(collect, out, dummy, is_leaf=lambda x: x is None)
    except ValueError:
      got = tree_flatten(out)[1]
      raise TypeError(
          "Custom VJP bwd rule must produce an output with the same container (pytree) "
          "structure as the args tuple of the primal function, and in particular must produce "
          "a tuple of length equal to the number of arguments to the primal function, but got "
          f"bwd output structure {got} for primal input structure {self.in_tree}.") from None
    results = []
    for path, aval, ct in zip(paths, self.in_avals, flat):
      ct_aval = ad.tangent_aval(aval)
      if ct is missing or ad.is_float0(ct_aval):
        results.append(Zero(ct_aval))
        continue
      if type(ct) in (SymbolicZero, Zero):
        if not _typematch(ct.aval, ct_aval, vma=True):
          raise ValueError(
              "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not "
              f"match the corresponding input tangent shape/dtype: at output{keystr(path)} the "
              f"SymbolicZero had shape/dtype {ct.aval.str_short()} while the corresponding "
              f"input had shape/dtype {aval.str_short()}. Consider just returning a None here "
              "instead of a SymbolicZero object.")
        results.append(Zero(ct_aval))
        continue
      got = core.get_aval(ct)
      if not _typematch(got, ct_aval, vma=True):
        if (got.shape == ct_aval.shape and dtypes.issubdtype(ct_aval.dtype, np.inexact)
            and got.vma == ct_aval.vma):
          # JAX lets a same-shape cotangent of another dtype through; cast it to the input's.
          ct = _convert_element_type(ct, ct_aval.dtype, ct_aval.weak_type)
        else:
          raise ValueError(
              "Custom VJP bwd rule must produce an output with the same type as the args tuple "
              f"of the primal function, but at output{keystr(path)} the bwd rule produced an "
              f"output of type {got.str_short()} corresponding to an input of type "
              f"{aval.str_short()}{type_mismatch_details(ct_aval, got)}")
      results.append(ct)
    return results


class _ResBwd:
  """`bwd` with its residual tree: the `bwd` param of custom_lin (printed as its name)."""
  __slots__ = ("bwd", "res_tree")

  def __init__(self, bwd, res_tree):
    self.bwd = bwd
    self.res_tree = res_tree

  def __str__(self):
    return str(self.bwd)

  def __call__(self, res, cts):
    return self.bwd(res, self.res_tree, cts)


custom_vjp_call_p = core.Primitive("custom_vjp_call")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.pp_name_first = True
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals))
custom_vjp_call_p.def_impl(_call_jaxpr_impl)
custom_vjp_call_p.def_lowering(_call_jaxpr_lowering)
custom_vjp_call_p.def_transpose(_call_jaxpr_transpose)


def _custom_vjp_call_pp(params):
  out = {"name": params["fun_name"], "bwd": params["bwd"], "call_jaxpr": params["call_jaxpr"],
         "fwd": params["fwd"], "symbolic_zeros": params["symbolic_zeros"]}
  if params["num_consts"]:
    out["num_consts"] = params["num_consts"]
  return out


custom_vjp_call_p.def_pp_params(_custom_vjp_call_pp)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts,
                         symbolic_zeros, fun_name):
  if any(type(t) is not Zero for t in tangents[:num_consts]):
    raise CustomVJPException()
  primals, tangents = primals[num_consts:], tangents[num_consts:]
  nonzeros = [type(t) is not Zero for t in tangents]
  res, res_tree, outs = fwd(list(primals), nonzeros)
  out_avals = [ad.tangent_aval(core.get_aval(o)) for o in outs]
  t_outs = custom_lin_p.bind(*res, *[t for t in tangents if type(t) is not Zero],
                             num_res=len(res), bwd=_ResBwd(bwd, res_tree),
                             out_avals=tuple(out_avals), symbolic_zeros=symbolic_zeros,
                             in_zeros=[not nz for nz in nonzeros])
  return outs, [Zero(a) if ad.is_float0(a) else t for a, t in zip(out_avals, t_outs)]


custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)


# The linear map of a custom_vjp function's tangents: defined only by its transpose (`bwd`).
custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_vjp_forward_error(*_, **__):
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p.def_impl(_custom_vjp_forward_error)
custom_lin_p.def_lowering(_custom_vjp_forward_error)
custom_lin_p.def_jvp(_custom_vjp_forward_error)
custom_lin_p.def_batch(_custom_vjp_forward_error)
custom_lin_p.def_pp_params(lambda p: {k: v for k, v in p.items() if k != "out_avals"})


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros, in_zeros):
  res = list(args[:num_res])
  if symbolic_zeros:
    cts = [SymbolicZero(c.aval) if type(c) is Zero else c for c in cts]
  else:
    cts = [ad.instantiate(c) for c in cts]
  cts_in = bwd(res, cts)
  return [None] * num_res + [ct for ct, z in zip(cts_in, in_zeros) if not z]


custom_lin_p.def_transpose(_custom_lin_transpose)


class custom_vjp(_CustomFunction):
  """A function with a custom VJP (reverse-mode) rule, given by `defvjp(fwd, bwd)`.

  Example:
    >>> @custom_vjp
    ... def f(x, y):
    ...   return jnp.sin(x) * y
    >>> def f_fwd(x, y):
    ...   return f(x, y), (jnp.cos(x), jnp.sin(x), y)
    >>> def f_bwd(res, g):
    ...   cos_x, sin_x, y = res
    ...   return (cos_x * g * y, sin_x * g)
    >>> f.defvjp(f_fwd, f_bwd)
  """

  def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
    super().__init__(fun, nondiff_argnums, nondiff_argnames)
    self.fwd = None
    self.bwd = None
    self.optimize_remat = False

  def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
    """Define the rule: `fwd(*args) -> (out, residuals)` and `bwd(residuals, ct_out) ->
    tuple of input cotangents` (None for an input with zero cotangent)."""
    self.fwd = fwd
    self.bwd = bwd
    self.symbolic_zeros = symbolic_zeros
    self.optimize_remat = optimize_remat
    if symbolic_zeros and optimize_remat:
      raise NotImplementedError("remat optimization for custom_vjp does not support symbolic "
                                "zeros")

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if not self.fwd or not self.bwd:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
    args = _resolve_kwargs(self.fun, args, kwargs, "custom_vjp", name)
    for i in self.nondiff_argnums:
      if i < len(args) and any(isinstance(x, core.Tracer) for x in tree_leaves(args[i])):
        raise UnexpectedTracerError(
            "Found a JAX Tracer object passed as an argument to a custom_vjp function in a "
            "position indicated by nondiff_argnums as non-differentiable. Tracers cannot be "
            "passed as non-differentiable arguments to custom_vjp functions; instead, "
            "nondiff_argnums should only be used for arguments that can't be or contain JAX "
            "tracers, e.g. function-valued arguments. In particular, array-valued arguments "
            "should typically not be indicated as nondiff_argnums.")
    fun, dyn_args, static_args = _split_nondiff(self.fun, self.nondiff_argnums, args)
    if core.trace_ctx.trace is core.eval_trace:
      return fun(*dyn_args)
    fwd, _, _ = _split_nondiff(self.fwd, self.nondiff_argnums, args)
    if self.optimize_remat:
      fwd = remat_opt_fwd(fun, fwd)
    leaves, in_tree = tree_flatten(dyn_args)
    closed, consts, out_tree = _trace_call(fun, leaves, in_tree)
    out_avals = closed.out_avals
    fwd_rule = _FwdRule(fwd, in_tree, out_tree, out_avals, self.symbolic_zeros, name,
                        _fun_name(self.fwd))
    bwd_rule = _BwdRule(self.bwd, static_args, in_tree, [core.get_aval(x) for x in leaves],
                        out_tree, name)
    outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=closed, fwd=fwd_rule,
                                  bwd=bwd_rule, num_consts=len(consts),
                                  symbolic_zeros=self.symbolic_zeros, fun_name=name)
    return tree_unflatten(out_tree, outs)


def custom_gradient(fun):
  """Define a function and its VJP at once: `fun(*args) -> (out, vjp_fn)` where
  `vjp_fn(ct) -> tuple of input cotangents`."""
  @custom_vjp
  def wrapped(*args):
    out, _ = fun(*args)
    return out

  def fwd(*args):
    out, vjp_fn = fun(*args)
    leaves, vjp_tree = tree_flatten(vjp_fn)
    return out, (leaves, vjp_tree)

  def bwd(res, ct):
    leaves, vjp_tree = res
    vjp_fn = tree_unflatten(vjp_tree, leaves)
    cts = vjp_fn(ct)
    return tuple(cts) if isinstance(cts, (list, tuple)) else (cts,)

  wrapped.defvjp(fwd, bwd)
  return wrapped


# ---- batching ---------------------------------------------------------------------------------
# Under vmap the call is re-bound on the parent trace with its jaxpr batched and its rules
# wrapped to run under a batching trace of their own; every output is batched at axis 0 (so the
# primal and tangent outputs of the batched rules always agree with the batched jaxpr).
def _unbatched_aval(aval, d):
  if d is None:
    return aval
  shape = aval.shape[:d] + aval.shape[d + 1:]
  return core.ShapedArray(shape, aval.dtype, aval.weak_type)


def _batched_aval(aval, size, d=0):
  shape = list(aval.shape)
  shape.insert(d, size)
  return core.ShapedArray(shape, aval.dtype, aval.weak_type)


class _BatchScope:
  """Runs a rule under a fresh batching trace; values enter at given axes and leave at 0."""

  def __init__(self, axis_data):
    self.b = batching
    self.axis_data = axis_data
    self.trace = batching.BatchTrace(core.current_trace(), axis_data)

  def wrap(self, x, d):
    if type(x) is Zero:
      return Zero(_unbatched_aval(x.aval, d))
    if type(x) is SymbolicZero:
      return SymbolicZero(_unbatched_aval(x.aval, d))
    return x if d is None else self.b.BatchTracer(self.trace, x, d)

  def unwrap(self, x):
    """(value, batch dim) of a rule output."""
    if type(x) in (Zero, SymbolicZero):
      return x, None
    return self.trace.to_batch_info(x)

  def at_front(self, x):
    """A rule output batched at axis 0 (zeros get the batched type)."""
    size = self.axis_data.size
    if type(x) in (Zero, SymbolicZero):
      return type(x)(_batched_aval(x.aval, size))
    v, d = self.unwrap(x)
    return self.b.matchaxis(d, 0, v, size)

  def run(self, fn, *args):
    with self.b.extend_axis_env(self.axis_data.name, self.axis_data.size), \
        core.set_current_trace(self.trace):
      return fn(*args)

  def close(self):
    self.trace.invalidate()


class _BatchedJvp:
  def __init__(self, jvp, axis_data, in_dims):
    self.jvp, self.axis_data, self.in_dims = jvp, axis_data, in_dims

  def __str__(self):
    return str(self.jvp)

  def __call__(self, primals, tangents):
    scope = _BatchScope(self.axis_data)
    try:
      ps = [scope.wrap(p, d) for p, d in zip(primals, self.in_dims)]
      ts = [scope.wrap(t, d) for t, d in zip(tangents, self.in_dims)]
      p_out, t_out = scope.run(self.jvp, ps, ts)
      p_out = [scope.at_front(p) for p in p_out]
      t_out = [scope.at_front(t) for t in t_out]
    finally:
      scope.close()
    return p_out, t_out


def _custom_jvp_call_batch(axis_data, args, dims, *, call_jaxpr, jvp, num_consts,
                           symbolic_zeros, fun_name):
  if all(d is None for d in dims):
    outs = custom_jvp_call_p.bind(*args, call_jaxpr=call_jaxpr, jvp=jvp, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros, fun_name=fun_name)
    return outs, [None] * len(outs)
  batched, _ = batching.batch_jaxpr(call_jaxpr, axis_data, dims, True)
  rule = _BatchedJvp(jvp, axis_data, list(dims[num_consts:]))
  outs = custom_jvp_call_p.bind(*args, call_jaxpr=batched, jvp=rule, num_consts=num_consts,
                                symbolic_zeros=symbolic_zeros, fun_name=fun_name)
  return outs, [0] * len(outs)


custom_jvp_call_p.def_batch_axis(_custom_jvp_call_batch)


class _BatchedFwd:
  def __init__(self, fwd, axis_data, in_dims):
    self.fwd, self.axis_data, self.in_dims = fwd, axis_data, in_dims

  def __str__(self):
    return str(self.fwd)

  def __call__(self, primals, nonzeros):
    scope = _BatchScope(self.axis_data)
    try:
      ps = [scope.wrap(p, d) for p, d in zip(primals, self.in_dims)]
      res, res_tree, outs = scope.run(self.fwd, ps, nonzeros)
      res_pairs = [scope.unwrap(r) for r in res]
      outs = [scope.at_front(o) for o in outs]
    finally:
      scope.close()
    res_vals = [v for v, _ in res_pairs]
    res_dims = tuple(d for _, d in res_pairs)
    return res_vals, (res_tree, res_dims), outs


class _BatchedBwd:
  def __init__(self, bwd, axis_data, in_dims):
    self.bwd, self.axis_data, self.in_dims = bwd, axis_data, in_dims

  def __str__(self):
    return str(self.bwd)

  def __call__(self, res, res_tree, cts):
    inner_tree, res_dims = res_tree
    scope = _BatchScope(self.axis_data)
    try:
      rs = [scope.wrap(r, d) for r, d in zip(res, res_dims)]
      cs = [scope.wrap(c, 0) for c in cts]
      cts_in = scope.run(self.bwd, rs, inner_tree, cs)
      out = []
      for ct, d in zip(cts_in, self.in_dims):
        if type(ct) in (Zero, SymbolicZero):
          out.append(Zero(ct.aval if d is None else
                          _batched_aval(ct.aval, self.axis_data.size, d)))
          continue
        v, e = scope.unwrap(ct)
        if d is None and e is not None:
          v = reductions.reduce_sum(v, (e,))   # shared input: cotangents of all examples add up
        elif d is not None:
          v = scope.b.matchaxis(e, d, v, self.axis_data.size)
        out.append(v)
    finally:
      scope.close()
    return out


def _custom_vjp_call_batch(axis_data, args, dims, *, call_jaxpr, fwd, bwd, num_consts,
                           symbolic_zeros, fun_name):
  if all(d is None for d in dims):
    outs = custom_vjp_call_p.bind(*args, call_jaxpr=call_jaxpr, fwd=fwd, bwd=bwd,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros,
                                  fun_name=fun_name)
    return outs, [None] * len(outs)
  batched, _ = batching.batch_jaxpr(call_jaxpr, axis_data, dims, True)
  in_dims = list(dims[num_consts:])
  outs = custom_vjp_call_p.bind(*args, call_jaxpr=batched,
                                fwd=_BatchedFwd(fwd, axis_data, in_dims),
                                bwd=_BatchedBwd(bwd, axis_data, in_dims), num_consts=num_consts,
                                symbolic_zeros=symbolic_zeros, fun_name=fun_name)
  return outs, [0] * len(outs)


custom_vjp_call_p.def_batch_axis(_custom_vjp_call_batch)


# ---- closure conversion -------------------------------------------------------------------------
def _maybe_perturbed(x) -> bool:
  """Whether `x` may carry a nonzero tangent (so it must become an explicit argument)."""
  if not isinstance(x, core.Tracer):
    return False
  if isinstance(x, ad.JVPTracer):
    return True
  if isinstance(x, JitTracer):
    return not ad.is_float0(ad.tangent_aval(x.aval))
  return True


def closure_convert(fun, *example_args):
  """Hoist the closed-over values of `fun` that may be differentiated into explicit arguments.

  Returns `(converted_fun, consts)` with `converted_fun(*args, *consts) == fun(*args)`, for use
  with custom_vjp / custom_jvp functions taking functions as non-differentiable arguments.
  """
  leaves, in_tree = tree_flatten(example_args)
  avals = tuple(core.get_aval(x) for x in leaves)
  build = functools.partial(_closure_convert_for_avals, fun, in_tree, avals)
  if core.current_trace() is core.eval_trace:
    # Outside any trace nothing closed over can be a tracer: the conversion is memoized on the
    # function and the argument types (as JAX caches it), so a jit taking the converted function
    # as a static argument hits its cache on repeated calls.
    return core.memo([fun], ("closure_convert", in_tree, avals), build)
  return build()


def _closure_convert_for_avals(fun, in_tree, avals):
  jaxpr, consts, out_tree = tracing.trace_pytree_fun(fun, in_tree, avals)
  hoist = [_maybe_perturbed(c) for c in consts]
  kept = [c for c, h in zip(consts, hoist) if not h]
  hoisted = [c for c, h in zip(consts, hoist) if h]

  def converted_fun(*args_and_consts):
    n = len(args_and_consts) - len(hoisted)
    args, const_args = args_and_consts[:n], args_and_consts[n:]
    flat_args, tree2 = tree_flatten(tuple(args))
    if tree2 != in_tree:
      raise TypeError("The inputs to the closure produced by closure_convert must have the same "
                      "Pytree structure as the example arguments passed when closure_convert "
                      f"was called. Expected {in_tree}, but got {tree2}")
    k_it, h_it = iter(kept), iter(const_args)
    all_consts = [next(h_it) if h else next(k_it) for h in hoist]
    return tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, all_consts, *flat_args))

  return converted_fun, hoisted


# ---- linear_call: a linear function with its own transpose ------------------------------------
def _trace_lifted(fun, avals):
  """Trace the flat `fun` over `avals` into a ClosedJaxpr without constvars, and the values its
  leading (former const) inputs take."""
  jaxpr, consts = trace_to_jaxpr(fun, avals)
  return core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []), list(consts)


def linear_call(fun, fun_transpose, residual_args, linear_args):
  """Call `fun(residual_args, linear_args)`, a function linear in `linear_args`, whose
  transpose (with respect to them) is `fun_transpose(residual_args, cotangents)`.

  Under JVP the tangent goes through `fun` again; under transposition (grad, vjp,
  linear_transpose) `fun_transpose` is called, without differentiating or transposing `fun`.
  Returns `fun`'s result.
  """
  res_leaves, res_tree = tree_flatten(residual_args)
  lin_leaves, lin_tree = tree_flatten(linear_args)
  res_avals = [core.get_aval(x) for x in res_leaves]
  lin_avals = [core.get_aval(x) for x in lin_leaves]
  box = {}

  def flat_fun(*xs):
    out = fun(tree_unflatten(res_tree, xs[:len(res_leaves)]),
              tree_unflatten(lin_tree, xs[len(res_leaves):]))
    out_leaves, box["out_tree"] = tree_flatten(out)
    return out_leaves

  callee, f_consts = _trace_lifted(flat_fun, res_avals + lin_avals)
  out_tree = box["out_tree"]
  out_avals = callee.out_avals

  def flat_transpose(*xs):
    out = fun_transpose(tree_unflatten(res_tree, xs[:len(res_leaves)]),
                        tree_unflatten(out_tree, xs[len(res_leaves):]))
    out_leaves, t_tree = tree_flatten(out)
    if t_tree != lin_tree:
      raise TypeError("transpose output pytree structure must match that of linear inputs, "
                      f"got output structure {t_tree} and input structure {lin_tree}.")
    return out_leaves

  transpose_thunk = _memoize(lambda: _trace_lifted(flat_transpose, res_avals + list(out_avals)))
  outs = linear_call_p.bind(*f_consts, *res_leaves, *lin_leaves, callee=callee,
                            transpose_thunk=transpose_thunk, num_callee_consts=len(f_consts),
                            num_res=len(res_leaves))
  return tree_unflatten(out_tree, outs)


linear_call_p = core.Primitive("linear_call")
linear_call_p.multiple_results = True


@linear_call_p.def_impl
def _linear_call_impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
  return core.eval_jaxpr(callee.jaxpr, callee.consts, *args)


@linear_call_p.def_abstract_eval
def _linear_call_abstract_eval(*avals, callee, **_):
  return list(callee.out_avals)


@linear_call_p.def_lowering
def _linear_call_lowering(ctx, *args, callee, transpose_thunk, num_callee_consts, num_res):
  return mlir.jaxpr_subcomp(ctx.module_context, callee.jaxpr, [], list(args))


@linear_call_p.def_jvp
def _linear_call_jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
  # Linear in its linear inputs, so the tangent is the same call on their tangents (JAX
  # requires the consts and residuals not to be perturbed).
  n = num_callee_consts + num_res
  if any(type(t) is not Zero for t in tangents[:n]):
    raise TypeError("linear_call: the residual arguments (and values `fun` closes over) must "
                    "not be differentiated")
  params = {"callee": callee, "transpose_thunk": transpose_thunk,
            "num_callee_consts": num_callee_consts, "num_res": num_res}
  primals_out = linear_call_p.bind(*primals, **params)
  tangents_out = linear_call_p.bind(*primals[:n], *map(ad.instantiate, tangents[n:]), **params)
  return primals_out, tangents_out


@linear_call_p.def_transpose
def _linear_call_transpose_rule(cts, *args, callee, transpose_thunk, num_callee_consts,
                                num_res):
  transpose, t_consts = transpose_thunk()
  f_consts = args[:num_callee_consts]
  res = args[num_callee_consts:num_callee_consts + num_res]
  ct_avals = transpose.in_avals[len(t_consts) + num_res:]
  cts = [ad.zeros_like_aval(a) if type(ct) is Zero else ct for ct, a in zip(cts, ct_avals)]

  def new_transpose_thunk():
    return callee, list(f_consts)

  cts_out = linear_call_p.bind(*t_consts, *res, *cts, callee=transpose,
                               transpose_thunk=new_transpose_thunk,
                               num_callee_consts=len(t_consts), num_res=num_res)
  return [None] * (num_callee_consts + num_res) + list(cts_out)


# JAX defines no batching rule for linear_call: vmap over it raises JAX's error.
linear_call_p.def_batch(batching.no_batching_rule("linear_call"))
