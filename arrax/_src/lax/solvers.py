"""Solvers with implicitly defined derivatives: `custom_root` and `custom_linear_solve`.

`custom_root(f, x0, solve, tangent_solve)` returns `solve(f, x0)`, a root of `f`, and
differentiates it by the implicit function theorem (the derivative of the root with respect to
what `f` closes over is -(df/dx)^-1 df/dparams, the inverse applied by `tangent_solve`) rather
than through `solve`. It is a `custom_jvp` function, as in JAX (printed `custom_jvp_call[name=
_custom_root ...]`).

`custom_linear_solve(matvec, b, solve, transpose_solve)` returns `solve(matvec, b)` and binds
the `custom_linear_solve` primitive holding four jaxprs (matvec, its transpose vecmat, solve,
transpose_solve) and their closed-over values as leading operands. Its JVP solves again for
the right-hand side db - dA x; its transpose solves the transposed system; its batching rule
finds, by a fixed point, which of x and b are batched so the four jaxprs agree.

The functions are traced to jaxprs whose closed-over values are explicit leading inputs (as
JAX's `separate_consts`), so jaxprs print alike.
"""
from __future__ import annotations

import collections
from typing import Any, NamedTuple

import numpy as np

from arrax._src import ad, batching, core, tracing
from arrax._src.ad import Zero
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import tree_flatten, tree_leaves, tree_structure, tree_unflatten

__all__ = ["custom_linear_solve", "custom_root"]


# ---- shared helpers ---------------------------------------------------------------------------
def _flatten(lists):
  return [x for xs in lists for x in xs]


def _trace(fun, args_tree, avals):
  """`fun` traced at `avals` (its flattened positional arguments): (closed jaxpr taking its
  closed-over values first, those values, output treedef)."""
  t = common.trace_body(fun, args_tree, avals)
  return t.jaxpr, t.consts, t.out_tree


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
  if has_aux:
    children = actual_tree.children()
    if len(children) != 2:
      raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, but a "
                       "pytree tuple with auxiliary output was expected because has_aux was "
                       "set to True.")
    actual_tree = children[0]
  if actual_tree != expected_tree:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got "
                    f"{actual_tree} and {expected_tree}.")


def _linearize(fun, x):
  """(fun(x), the linear map t -> d fun(x)[t]) for a function of one pytree argument."""
  leaves, tree = tree_flatten((x,))
  box = []

  def flat(*xs):
    out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(tree, xs)))
    box.append(out_tree)
    return out_leaves

  out, lin = ad.linearize_flat(flat, leaves)

  def f_jvp(t):
    t_leaves, t_tree = tree_flatten((t,))
    if t_tree != tree:
      raise TypeError(f"linearized function called on tangent values inconsistent with the "
                      f"original primal values: got tangent tree {t_tree} for primal tree "
                      f"{tree}.")
    return tree_unflatten(box[0], [common.user_value(v) for v in lin.jvp(t_leaves)])

  return tree_unflatten(box[0], [common.user_value(v) for v in out]), f_jvp


def _linear_transpose(fun, example):
  """The transpose of the linear `fun` (one pytree argument like `example`, one output)."""
  leaves, tree = tree_flatten((example,))
  avals = [core.get_aval(v) for v in leaves]
  # Traced as JAX's linear_transpose traces (partial evaluation): identity broadcasts recorded.
  jaxpr, consts, _ = tracing.trace_pytree_fun(fun, tree, avals, forward_identities=False)

  def transposed(ct):
    ct_leaves = tree_leaves(ct)
    cts = ad.backward_pass(jaxpr, consts, [ad.UndefinedPrimal(a) for a in avals], ct_leaves)
    (out,) = tree_unflatten(tree, [common.user_value(c) for c in cts])
    return out

  return transposed


# ---- custom_root ------------------------------------------------------------------------------
_RootTuple = collections.namedtuple("_RootTuple", "f, solve, l_and_s")


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """A root of `f` found by `solve(f, initial_guess)`, differentiated implicitly.

  `f` maps a pytree like `initial_guess` to one of the same structure. `tangent_solve(g, y)`
  must return x with g(x) = y for the linear function `g` (f linearized at the root), e.g.
  `lambda g, y: y / g(1.0)` for scalars. With `has_aux`, `solve` returns (root, aux) and aux
  gets no derivative. Derivatives flow to the values `f` closes over (not to the guess).
  """
  guess_leaves, guess_tree = tree_flatten(initial_guess)
  guess_avals = [core.get_aval(x) for x in guess_leaves]
  args_tree = tree_structure((initial_guess,))
  f_jaxpr, f_consts, f_out_tree = _trace(f, args_tree, guess_avals)
  _check_tree("f", "initial_guess", f_out_tree, guess_tree, False)

  solve_jaxpr, solve_consts, solution_tree = _trace(lambda x: solve(f, x), args_tree,
                                                     guess_avals)
  _check_tree("solve", "initial_guess", solution_tree, guess_tree, has_aux)

  def linearize_and_solve(x, b):
    _, f_jvp = _linearize(f, x)
    return tangent_solve(f_jvp, b)

  pair_tree = tree_structure(((initial_guess, initial_guess),))
  l_and_s_jaxpr, l_and_s_consts, l_and_s_tree = _trace(
      lambda xb: linearize_and_solve(*xb), pair_tree, guess_avals + guess_avals)
  _check_tree("tangent_solve", "x", l_and_s_tree, guess_tree, False)

  all_consts = [f_consts, solve_consts, l_and_s_consts]
  lengths = _RootTuple(*map(len, all_consts))
  jaxprs = _RootTuple(f_jaxpr, solve_jaxpr, l_and_s_jaxpr)
  solution = _custom_root(lengths, jaxprs, *_flatten(all_consts), *guess_leaves)
  return tree_unflatten(solution_tree, solution)


def _custom_root_impl(lengths, jaxprs, *args):
  *params, guess = common.split_list(args, lengths)
  params = _RootTuple(*params)
  return core.jaxpr_as_fun(jaxprs.solve)(*params.solve, *guess)


_custom_root_impl.__name__ = "_custom_root"
_custom_root = custom_jvp(_custom_root_impl, nondiff_argnums=(0, 1))


def _root_jvp(lengths, jaxprs, primals, tangents):
  *params, _ = common.split_list(primals, lengths)
  params = _RootTuple(*params)
  solution = _custom_root(lengths, jaxprs, *primals)
  n_out = len(jaxprs.f.out_avals)
  solution, aux = solution[:n_out], solution[n_out:]
  *params_dot, _ = common.split_list(tangents, lengths)
  params_dot = _RootTuple(*params_dot)

  # f(p, x*(p)) = 0 near the root, so  dx* = -(df/dx)^-1 (df/dp dp).
  f = core.jaxpr_as_fun(jaxprs.f)
  _, rhs = ad.jvp_flat(lambda *p: f(*p, *solution), list(params.f), list(params_dot.f))
  rhs = [ad.instantiate(t) for t in rhs]
  solved = core.jaxpr_as_fun(jaxprs.l_and_s)(*params.l_and_s, *solution, *rhs)
  solution_dot = [lax.neg(t) for t in solved]
  aux_dot = [ad.zeros_like_aval(ad.tangent_aval(core.get_aval(a))) for a in aux]
  return solution + aux, solution_dot + aux_dot


_root_jvp.__name__ = "_root_jvp"
_custom_root.defjvp(_root_jvp)


# ---- custom_linear_solve ----------------------------------------------------------------------
class _LinearSolveTuple(NamedTuple):
  matvec: Any
  vecmat: Any
  solve: Any
  transpose_solve: Any

  def transpose(self):
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _check_shapes(func_name, expected_name, actual, expected):
  actual_shapes = [np.shape(x) for x in actual]
  expected_shapes = [np.shape(x) for x in expected]
  if actual_shapes != expected_shapes:
    raise ValueError(f"{func_name}() output shapes must match {expected_name}, got "
                     f"{actual_shapes} and {expected_shapes}")


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
  """solve(matvec, b): x with matvec(x) = b, differentiated implicitly at the solution.

  `matvec` is linear (and differentiable); `solve(matvec, y)` and `transpose_solve(vecmat, y)`
  (vecmat: the transpose of matvec, derived automatically) invert it and need not be
  differentiable. Reverse-mode derivatives need `transpose_solve`, or `symmetric=True` (then
  `solve` is used for it). With `has_aux`, the solvers return (x, aux).
  """
  if transpose_solve is None and symmetric:
    transpose_solve = solve
  b_leaves, tree = tree_flatten(b)
  b_avals = [core.get_aval(x) for x in b_leaves]
  args_tree = tree_structure((b,))

  def shape_checked(fun, name, aux):
    def checked(x):
      out = fun(x)
      y, _ = out if aux else (out, None)   # (unpacked as a pair when there is an aux output)
      _check_shapes(name, "b", tree_leaves(y), b_leaves)
      return out
    return checked

  matvec_jaxpr, matvec_consts, out_tree = _trace(shape_checked(matvec, "matvec", False),
                                                 args_tree, b_avals)
  _check_tree("matvec", "b", out_tree, tree, False)
  solve_jaxpr, solve_consts, out_tree = _trace(
      shape_checked(lambda x: solve(matvec, x), "solve", has_aux), args_tree, b_avals)
  _check_tree("solve", "b", out_tree, tree, has_aux)

  if transpose_solve is None:
    vecmat_jaxpr = tr_solve_jaxpr = None
    vecmat_consts = tr_solve_consts = []
  else:
    if symmetric:
      vecmat = matvec
      vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
    else:
      vecmat = _linear_transpose(matvec, b)
      vecmat_jaxpr, vecmat_consts, _ = _trace(vecmat, args_tree, b_avals)
    tr_solve_jaxpr, tr_solve_consts, out_tree = _trace(
        shape_checked(lambda x: transpose_solve(vecmat, x), "transpose_solve", has_aux),
        args_tree, b_avals)
    _check_tree("transpose_solve", "b", out_tree, tree, has_aux)

  all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
  lengths = _LinearSolveTuple(*map(len, all_consts))
  jaxprs = _LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr)
  outs = linear_solve_p.bind(*_flatten(all_consts), *b_leaves, const_lengths=lengths,
                             jaxprs=jaxprs)
  return tree_unflatten(out_tree, outs)


linear_solve_p = core.Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True


def _num_aux(jaxprs):
  return len(jaxprs.solve.out_avals) - len(jaxprs.matvec.out_avals)


@linear_solve_p.def_abstract_eval
def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
  outs = list(avals[sum(const_lengths):])
  n_aux = _num_aux(jaxprs)
  if n_aux > 0:
    outs += list(jaxprs.solve.out_avals[-n_aux:])
  return outs


def _solve_fun(const_lengths, jaxprs):
  def fun(*args):
    *params, b = common.split_list(args, const_lengths)
    params = _LinearSolveTuple(*params)
    return core.jaxpr_as_fun(jaxprs.solve)(*params.solve, *b)
  return fun


@linear_solve_p.def_lowering
def _linear_solve_lower(ctx, *args, const_lengths, jaxprs):
  return common.lower_fun(_solve_fun(const_lengths, jaxprs))(ctx, *args)


def _tangent_of_linear_map(fun, params, params_dot, x):
  """dA x for the map x -> A(params) x (computed by `fun(*params, *x)`)."""
  zeros = [Zero(ad.tangent_aval(core.get_aval(v))) for v in x]
  _, out = ad.jvp_flat(fun, list(params) + list(x), list(params_dot) + zeros)
  return out


@linear_solve_p.def_jvp
def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
  # A x = b  =>  dA x + A dx = db  =>  dx = A^-1 (db - dA x)
  params_kw = dict(const_lengths=const_lengths, jaxprs=jaxprs)
  x = linear_solve_p.bind(*primals, **params_kw)
  *params, _ = common.split_list(primals, const_lengths)
  params = _LinearSolveTuple(*params)
  *params_dot, b_dot = common.split_list(tangents, const_lengths)
  params_dot = _LinearSolveTuple(*params_dot)
  n_x = len(b_dot)
  x_leaves = x[:n_x]
  if all(type(p) is Zero for p in params_dot.matvec):
    rhs = b_dot
  else:
    dax = _tangent_of_linear_map(core.jaxpr_as_fun(jaxprs.matvec), params.matvec,
                                 params_dot.matvec, x_leaves)
    rhs = [ad.add_tangents(db, t if type(t) is Zero else lax.neg(t))
           for db, t in zip(b_dot, dax)]
  rhs = [ad.instantiate(t) for t in rhs]
  x_dot = linear_solve_p.bind(*_flatten(params), *rhs, **params_kw)
  aux_dot = [Zero(ad.tangent_aval(core.get_aval(v))) for v in x_dot[n_x:]]
  return x, list(x_dot[:n_x]) + aux_dot


@linear_solve_p.def_transpose
def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve")
  *params, b = common.split_list(args, const_lengths)
  params = _LinearSolveTuple(*params)
  if any(ad.is_undefined(x) for xs in params for x in xs):
    raise NotImplementedError("custom_linear_solve cannot be transposed with respect to the "
                              "values its functions close over")
  x_cts, aux_cts = cts[:len(b)], cts[len(b):]
  if any(type(ct) is not Zero for ct in aux_cts):
    raise NotImplementedError("custom_linear_solve cannot be transposed with respect to its "
                              "auxiliary outputs")
  b_cts = linear_solve_p.bind(*_flatten(params.transpose()),
                              *[ad.instantiate(ct) for ct in x_cts],
                              const_lengths=const_lengths.transpose(),
                              jaxprs=jaxprs.transpose())
  return [None] * sum(const_lengths) + list(b_cts[:len(b)])


@linear_solve_p.def_batch_axis
def _linear_solve_batch(axis_data, args, dims, *, const_lengths, jaxprs):
  if all(d is None for d in dims):
    return linear_solve_p.bind(*args, const_lengths=const_lengths, jaxprs=jaxprs), \
        [None] * len(jaxprs.solve.out_avals)
  *params, b = common.split_list(args, const_lengths)
  *params_dims, b_dims = common.split_list(dims, const_lengths)
  params_bat = _LinearSolveTuple(*[[d is not None for d in ds] for ds in params_dims])
  orig_b_bat = [d is not None for d in b_dims]
  matvec, vecmat, solve, solve_t = jaxprs
  n_ops = len(matvec.out_avals)
  n_aux = len(solve.out_avals) - n_ops

  def batched(closed, bats, instantiate):
    in_dims = [0 if b else None for b in bats]
    jaxpr, out_dims = batching.batch_jaxpr(closed, axis_data, in_dims,
                                           [True if i else False for i in instantiate])
    return jaxpr, [d is not None for d in out_dims]

  # Which parts of x and b are batched, so that all four jaxprs agree: a fixed point.
  b_bat = orig_b_bat
  x_bat = [False] * len(solve.out_avals)
  for _ in range(1 + len(orig_b_bat) + len(solve.out_avals)):
    solve_b, solve_x_bat = batched(solve, params_bat.solve + b_bat, x_bat)
    if vecmat is None:
      vecmat_b = None
      x_bat_out = solve_x_bat
    else:
      vecmat_b, vecmat_x_bat = batched(vecmat, params_bat.vecmat + b_bat, b_bat)
      x_bat_out = [a or s for a, s in zip(vecmat_x_bat + [True] * n_aux, solve_x_bat)]
    x_bat_ops = x_bat_out[:n_ops]
    matvec_b, matvec_b_bat = batched(matvec, params_bat.matvec + x_bat_ops, b_bat)
    if solve_t is None:
      solve_t_b = None
      b_bat_out = [m or o for m, o in zip(matvec_b_bat, orig_b_bat)]
    else:
      solve_t_b, solve_t_bat = batched(solve_t, params_bat.transpose_solve + x_bat_ops,
                                       x_bat_out)
      b_bat_out = [m or s or o for m, s, o in zip(matvec_b_bat, solve_t_bat[:len(orig_b_bat)],
                                                  orig_b_bat)]
    if x_bat_out == x_bat and b_bat_out == b_bat:
      break
    x_bat, b_bat = x_bat_out, b_bat_out
  else:
    raise AssertionError("custom_linear_solve batching: no fixed point")

  new_params = [x if d is None else batching.moveaxis(x, d, 0)
                for x, d in zip(_flatten(params), _flatten(params_dims))]
  new_b = [batching.broadcast(x, axis_data.size, 0) if now and not was else
           batching.moveaxis(x, d, 0) if now and d != 0 else x
           for x, d, was, now in zip(b, b_dims, orig_b_bat, b_bat)]
  outs = linear_solve_p.bind(*new_params, *new_b, const_lengths=const_lengths,
                             jaxprs=_LinearSolveTuple(matvec_b, vecmat_b, solve_b, solve_t_b))
  return outs, [0 if bat else None for bat in solve_x_bat]
