"""`buffer_callback` (`jax.experimental.buffer_callback`): a host callback writing its results
in place into XLA's output buffers.

The primitive lowers to jaxlib's statically registered typed-FFI target
`xla_buffer_python_cpu_callback`, whose `index` attribute picks the Python function from the
executable's host-callback list (the list `callback.emit_python_callback` uses). jaxlib calls
it with an `ExecutionContext` and one `Buffer` per operand and result; the user's function
gets `(ctx, out_buffers_tree, *args, **kwargs)` and must return None.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from jaxlib import _jax

from arrax._src import core, ffi
from arrax._src.callback import batch_by_vmap_method
from arrax._src.tree_util import tree_flatten, tree_unflatten

Buffer = _jax.ffi.Buffer
ExecutionStage = _jax.ffi.ExecutionStage
ExecutionContext = _jax.ffi.ExecutionContext


def buffer_callback(callback: Callable[..., None], result_shape_dtypes: object, *,
                    has_side_effect: bool = False, vmap_method: str | None = None,
                    input_output_aliases: dict[int, int] | None = None,
                    command_buffer_compatible: bool = False):
  """A function running `callback(ctx, out, *args, **kwargs)` on the host, also under jit.

  `out` is a pytree (the structure of `result_shape_dtypes`, objects with shape and dtype) of
  writable `Buffer`s the callback fills in place (e.g. through `np.asarray(buf)[...] = v`);
  each leaf of the arguments is a read-only `Buffer`. `has_side_effect` keeps the call when
  its results are unused; `vmap_method` is as for `pure_callback`; `input_output_aliases`
  maps flat input indices to the result indices sharing their buffers.

  Example:
    >>> def add_one(ctx, out, x):
    ...   np.asarray(out)[...] = np.asarray(x) + 1
    >>> buffer_callback(add_one, jax.ShapeDtypeStruct((), jnp.int32))(jnp.int32(41))
    Array(42, dtype=int32)
  """
  leaves, out_tree = tree_flatten(result_shape_dtypes)
  result_avals = tuple(core.ShapedArray(x.shape, x.dtype) for x in leaves)

  def wrapped_callback(*args, **kwargs):
    flat_args, in_tree = tree_flatten((args, kwargs))
    in_avals = [core.get_aval(x) for x in flat_args]
    aliases = ffi._checked_aliases(input_output_aliases, len(args), in_avals, result_avals)
    outs = buffer_callback_p.bind(
        *flat_args, callback=callback, result_avals=result_avals, in_tree=in_tree,
        out_tree=out_tree, vmap_method=vmap_method, has_side_effect=has_side_effect,
        input_output_aliases=aliases, command_buffer_compatible=command_buffer_compatible)
    return tree_unflatten(out_tree, outs)

  return wrapped_callback


buffer_callback_p = core.Primitive("buffer_callback")
buffer_callback_p.multiple_results = True
# With a side effect: never dropped, even when its results are unused.
buffer_callback_p.effectful = lambda params: params["has_side_effect"]


@buffer_callback_p.def_abstract_eval
def _buffer_callback_abstract_eval(*avals, result_avals, **params):
  return list(result_avals)


@buffer_callback_p.def_jvp
def _buffer_callback_jvp(primals, tangents, **params):
  raise ValueError("Buffer callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


@buffer_callback_p.def_transpose
def _buffer_callback_transpose(ct, *args, **params):
  raise ValueError("Buffer callbacks do not support transpose. Please use `jax.custom_vjp` "
                   "to use callbacks while taking gradients.")


buffer_callback_p.def_batch(functools.partial(batch_by_vmap_method, buffer_callback_p))


@buffer_callback_p.def_lowering
def _buffer_callback_lowering(ctx, *args, callback, in_tree, out_tree, has_side_effect,
                              input_output_aliases, **params):
  n_in = in_tree.num_leaves

  def host_fn(exec_ctx, *buffers):
    ins, outs = buffers[:n_in], buffers[n_in:]
    py_args, py_kwargs = tree_unflatten(in_tree, ins)
    if callback(exec_ctx, tree_unflatten(out_tree, outs), *py_args, **py_kwargs) is not None:
      raise ValueError("buffer_callback callback must not return any values.")
    return ()

  mctx = ctx.module_context
  mctx.host_callbacks.append(host_fn)
  rule = ffi.ffi_lowering("xla_buffer_python_cpu_callback", has_side_effect=has_side_effect,
                          operand_output_aliases=dict(input_output_aliases))
  return rule(ctx, *args, index=np.uint64(len(mctx.host_callbacks) - 1))
