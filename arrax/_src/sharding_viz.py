"""Seeing how arrays are laid out over devices: `arrax.debug.inspect_array_sharding`,
`visualize_sharding` and `visualize_array_sharding` (JAX 0.10.2's names and output).

`inspect_array_sharding` binds `inspect_sharding`, a primitive without results (so an effect
nothing drops) holding the user's callback. Eagerly the callback gets the array's sharding. Under
jit it is called while the program is lowered (one device: a replicated sharding) or, for a
program XLA partitions over a mesh (jit with shardings), by XLA's SPMD partitioner through the
`InspectSharding` custom call with the layout it chose, named by a PartitionSpec over the mesh.
Either way only when the function is compiled, not at every call, as in JAX.

The table is drawn with the optional `rich` package (imported when first drawing, since arrax
does not depend on it), laid out cell by cell as JAX lays it out so the text is the same.
"""
from __future__ import annotations

import importlib
import importlib.util

import numpy as np
from jaxlib import xla_client as xc
from jaxlib.mlir import ir

from arrax._src import backend, core, mlir, spmd
from arrax._src.sharding_impls import GSPMDSharding, Mesh, NamedSharding, PartitionSpec
from arrax._src.tree_util import tree_map


# ---- the inspect_sharding primitive -------------------------------------------------------------
inspect_sharding_p = core.Primitive("inspect_sharding")
inspect_sharding_p.multiple_results = True


@inspect_sharding_p.def_abstract_eval
def _inspect_sharding_abstract_eval(aval, *, callback):
  return []


@inspect_sharding_p.def_impl
def _inspect_sharding_impl(value, *, callback):
  callback(value.sharding)
  return []


@inspect_sharding_p.def_lowering
def _inspect_sharding_lowering(ctx, value, *, callback):
  mctx = ctx.module_context
  if mctx.mesh is None:
    # One device: nothing is partitioned, so the layout is known now.
    callback(GSPMDSharding((backend.default_device(),), xc.HloSharding.replicate()))
    return []
  # (JAX names the layout over the compiled mesh's devices and axis names, Auto axes.)
  mesh = Mesh(mctx.mesh.devices, mctx.mesh.axis_names)
  ndim = ctx.avals_in[0].ndim
  if mesh.size == 1 or mctx.axis_env:
    # (Values in a shard_map or pmap body are per device: JAX names them P() over the mesh,
    # for pmap a one-axis mesh `_internal_pmap_axis_name`.)
    callback(NamedSharding(mesh, PartitionSpec()))
    return []

  def from_partitioner(hlo_sharding):
    callback(spmd._named_from_hlo(mesh, hlo_sharding, ndim))

  mctx.keepalive.append(from_partitioner)
  mlir.custom_call("InspectSharding", result_types=[value.type], operands=[value],
                   backend_config=xc.encode_inspect_sharding_callback(from_partitioner),
                   has_side_effect=True, api_version=1)
  return []


@inspect_sharding_p.def_batch
def _inspect_sharding_batch(args, dims, *, callback):
  # The callback sees the whole batched value's sharding, once.
  inspect_sharding_p.bind(args[0], callback=callback)
  return [], []


inspect_sharding_p.def_jvp(lambda primals, tangents, **params: (
    inspect_sharding_p.bind(*primals, **params), []))
inspect_sharding_p.def_transpose(lambda ct, *args, **params: [None] * len(args))


def inspect_array_sharding(value, *, callback):
  """Call `callback` with the sharding of every array in the pytree `value`: at once for
  concrete arrays, when the enclosing jit is compiled for traced ones (with the layout XLA
  chose)."""
  tree_map(lambda v: inspect_sharding_p.bind(v, callback=callback), value)


# ---- drawing --------------------------------------------------------------------------------------
def _chunk_index(size, slc):
  """Which block along an axis of `size` the slice `slc` is (0 for the whole axis)."""
  if isinstance(slc, int):
    slc = slice(slc, slc + 1)
  if slc.start is None and slc.stop is None:
    return 0
  return slc.start // (slc.stop - slc.start)


def _extent(slc, size):
  if isinstance(slc, int):
    return 1
  return size if slc.stop is None else slc.stop - slc.start


def _hex_color(color):
  if isinstance(color, str):
    return color
  return "#" + "".join(f"{int(c * 255):02X}" for c in color)


def _text_color(hex_color):
  r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
  return "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"


def _colors(color_map, n):
  """n colors from `color_map`, visiting its range in jumps of about half of it."""
  points = np.linspace(0, 1, n)
  step = n // 2 + (n % 2 == 0)
  i = 0
  for _ in range(n):
    yield color_map(points[i])
    i = (i + step) % n


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None):
  """Print a table of which devices hold which block of an array of `shape` (1-D or 2-D)
  laid out by `sharding`. Needs the `rich` package."""
  if importlib.util.find_spec("rich") is None:
    raise ValueError("`visualize_sharding` requires `rich` to be installed.")
  rich_align = importlib.import_module("rich.align")
  rich_box = importlib.import_module("rich.box")
  rich_console = importlib.import_module("rich.console")
  rich_padding = importlib.import_module("rich.padding")
  rich_style = importlib.import_module("rich.style")
  rich_table = importlib.import_module("rich.table")
  if not 1 <= len(shape) <= 2:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  console = rich_console.Console(width=max_width)
  use_color = use_color and console.color_system is not None
  if use_color and not color_map:
    if importlib.util.find_spec("matplotlib") is None:
      use_color = False
    else:
      color_map = importlib.import_module("matplotlib").colormaps["tab20b"]

  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  platform = next(iter(sharding.device_set)).platform.upper()

  owners, heights, widths = {}, {}, {}
  for device, index in sharding.devices_indices_map(tuple(shape)).items():
    cell = tuple(_chunk_index(n, s) for n, s in zip(shape, index))
    if len(shape) == 2:
      heights[cell] = _extent(index[0], shape[0]) / shape[0]
      widths[cell] = _extent(index[1], shape[1]) / shape[1]
    else:
      cell = (0, *cell)
      heights[cell] = None
      widths[cell] = _extent(index[0], shape[0]) / shape[0]
    owners.setdefault(cell, set()).add(device.id)
  rows = max(c[0] for c in owners) + 1
  cols = max(c[1] for c in owners) + 1

  colors = _colors(color_map, rows * cols) if use_color else None
  table = rich_table.Table(show_header=False, show_lines=not use_color, padding=0,
                           highlight=not use_color, pad_edge=False,
                           box=None if use_color else rich_box.SQUARE)
  for i in range(rows):
    row = []
    for j in range(cols):
      label = f"{platform} " + ",".join(str(d) for d in sorted(owners[i, j]))
      width = min(max(int(widths[i, j] * base_width * 2.5), min_width), max_width)
      height = 1 if heights[i, j] is None else int(heights[i, j] * base_height)
      left, extra = divmod(width - len(label) - 2, 2)
      right = left + extra
      top, extra = divmod(height - 2, 2)
      bottom = top + extra
      bg = fg = None
      if use_color:
        bg = _hex_color(next(colors)[:3])
        fg = _text_color(bg)
        top, right, bottom, left = top + 1, right + 1, bottom + 1, left + 1
      row.append(rich_padding.Padding(
          rich_align.Align(label, "center", vertical="middle"),
          (max(top, 0), max(right, 0), max(bottom, 0), max(left, 0)),
          style=rich_style.Style(bgcolor=bg, color=fg)))
    table.add_row(*row)
  console.print(table, end="\n\n")


def visualize_array_sharding(arr, **kwargs):
  """Print the table of `visualize_sharding` for the array `arr` (inside jit: when the
  function is compiled, with the layout XLA chose)."""
  inspect_array_sharding(
      arr, callback=lambda sharding: visualize_sharding(arr.shape, sharding, **kwargs))
