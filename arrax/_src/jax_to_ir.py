"""Convert a function to a serialized IR for other systems (`jax.tools.jax_to_ir`).

`jax_to_ir(fn, input_shapes, constants=..., format="HLO")` lowers `fn` for the named argument
shapes (parameters in the order of `input_shapes`, `constants` baked in) and returns the
serialized HLO module proto with its HLO text. `format="TF"` (a TensorFlow GraphDef through
jax2tf) needs TensorFlow and jax2tf; arrax has no jax2tf, so it raises ValueError.

The command line (`python -m arrax.tools.jax_to_ir --fn mod.f --input_shapes ...`) takes JAX's
absl flags. absl is imported, and the flags defined, only when the CLI runs, so importing the
module does not need absl.
"""
from __future__ import annotations

import ast
import functools
import importlib
import re

from arrax._src.core import ShapedArray
from arrax._src.jit import jit
from arrax._src.numpy import ml_scalar_types as _ml
from arrax._src.numpy import scalar_types as _st
from arrax._src.numpy.creation import asarray, zeros


def _import_tf():
  try:
    import tensorflow
  except ImportError:
    return None
  return tensorflow


def jax_to_ir(fn, input_shapes, *, constants=None, format):
  """Lower `fn` for `input_shapes` ([(arg name, ShapedArray)], the parameter order) with the
  keyword `constants` fixed; returns (serialized IR, human-readable text). `format`: "HLO" or
  "TF"."""
  constants = constants or {}
  both = sorted({name for name, _ in input_shapes} & set(constants))
  if both:
    raise ValueError("Arguments appear in both `input_shapes` and `constants`: "
                     + ", ".join(both))
  names = [name for name, _ in input_shapes]
  args = [zeros(aval.shape, aval.dtype) for _, aval in input_shapes]
  bound = functools.partial(fn, **constants)

  def ordered_wrapper(*args):
    return bound(**dict(zip(names, args)))

  if format == "HLO":
    hlo = jit(ordered_wrapper).lower(*args).compiler_ir("hlo")
    return hlo.as_serialized_hlo_module_proto(), hlo.as_hlo_text()
  assert format == "TF"
  if _import_tf() is None:
    raise ValueError("Conversion to TF graph requires TensorFlow to be installed.")
  raise ValueError("Conversion to TF graph requires jax.experimental.jax2tf to be importable "
                   "(arrax has no jax2tf).")


def tf_wrap_with_input_names(f, input_shapes):
  """`f` with each argument passed through `tf.identity` named after its `input_shapes` entry."""
  def named(*args):
    tf = _import_tf()
    assert tf is not None
    return f(*(tf.identity(a, name=name) for a, (name, _) in zip(args, input_shapes)))
  return named


jax_to_hlo = functools.partial(jax_to_ir, format="HLO")
jax_to_tf = functools.partial(jax_to_ir, format="TF")


# XLA's short dtype names (the spelling of HLO shapes) -> scalar types.
_DT = {
    "pred": _st.bool_,
    "u2": _ml.uint2, "u4": _ml.uint4, "u8": _st.uint8, "u16": _st.uint16, "u32": _st.uint32,
    "u64": _st.uint64,
    "s2": _ml.int2, "s4": _ml.int4, "s8": _st.int8, "s16": _st.int16, "s32": _st.int32,
    "s64": _st.int64,
    "bf16": _st.bfloat16,
    "f16": _st.float16, "f32": _st.float32, "f64": _st.float64,
    "c64": _st.complex64, "c128": _st.complex128,
}
if _ml.int1 is not None:
  _DT["s1"] = _ml.int1
if _ml.uint1 is not None:
  _DT["u1"] = _ml.uint1

_SHAPE_RE = re.compile(f"^({'|'.join(_DT)})\\[\\s*(\\d*[\\s*,\\d+]*)\\s*\\]$")


def parse_shape_str(s):
  """A ShapedArray from an XLA shape string such as "f32[8,128]" (or "s32[]")."""
  m = _SHAPE_RE.match(s)
  if m is None:
    raise ValueError(f'Invalid shape {s}. Valid example: "f32[1,2,3]".'
                     f"Note that dtype must be one of {list(_DT)}")
  dims = m.group(2)
  shape = tuple(int(d.strip()) for d in dims.split(",")) if dims else ()
  return ShapedArray(shape, _DT[m.group(1)])


# ---- the command line (absl flags, defined when first needed) -------------------------------
_FLAGS = (
    ("string", "fn", None, "Fully-qualified name of function that we're going to convert"),
    ("string", "input_shapes", None, "Python dict indicating XLA shapes of params"),
    ("string", "constants", "{}", "Python dict giving constant values for some params"),
    ("string", "evaled_constants", "{}",
     "Python dict giving constant values for some params.  Values in this dict that are of "
     "type str are evaluated using ast.literal_eval."),
    ("enum", "ir_format", "HLO", "Output format."),
    ("string", "ir_dest", None, "File to write IR to"),
    ("string", "ir_human_dest", None, "File to write human readable debug output"),
)


def _flags():
  """absl's FLAGS with this tool's flags defined (once; reused if already defined)."""
  from absl import flags
  for kind, name, default, help_ in _FLAGS:
    if name in flags.FLAGS:
      continue
    if kind == "enum":
      flags.DEFINE_enum(name, default, ("HLO", "TF"), help_)
    else:
      flags.DEFINE_string(name, default, help_)
  return flags.FLAGS


def _constant(v):
  return asarray(v) if isinstance(v, list) else v


def main(argv):
  """The CLI's body (run by absl's `app.run` with the flags parsed)."""
  from absl import app
  FLAGS = _flags()
  if len(argv) != 1:
    raise app.UsageError("No positional arguments are accepted.")
  if not FLAGS.ir_dest and not FLAGS.ir_human_dest:
    raise app.Error("At least one of --ir_dest and --ir_human_dest is required.")
  assert FLAGS.input_shapes is not None
  assert FLAGS.fn is not None
  module_name, fn_name = FLAGS.fn.rsplit(".", 1)
  fn = getattr(importlib.import_module(module_name), fn_name)
  input_shapes = [(name, parse_shape_str(s)) for name, s in ast.literal_eval(FLAGS.input_shapes)]
  constants = {k: _constant(v) for k, v in ast.literal_eval(FLAGS.constants).items()}
  for k, v in ast.literal_eval(FLAGS.evaled_constants).items():
    if isinstance(v, str):
      v = ast.literal_eval(v)
    if k in constants:
      raise ValueError(f"Argument appears in both --constants and --evaled_constants: {k}")
    constants[k] = _constant(v)
  ir, text = jax_to_ir(fn, input_shapes, constants=constants, format=FLAGS.ir_format)
  if FLAGS.ir_dest:
    with open(FLAGS.ir_dest, "wb") as f:
      f.write(ir)
  if FLAGS.ir_human_dest:
    with open(FLAGS.ir_human_dest, "w") as f:
      f.write(text)


def set_up_flags():
  """Mark --fn and --input_shapes required."""
  from absl import flags
  FLAGS = _flags()
  flags.mark_flag_as_required("fn", flag_values=FLAGS)
  flags.mark_flag_as_required("input_shapes", flag_values=FLAGS)


def _run():
  """`python -m arrax.tools.jax_to_ir ...`."""
  from absl import app
  set_up_flags()
  app.run(main)

