"""jax.ffi against JAX 0.10.2: a small C library of FFI handlers (written against XLA's FFI C
API from the headers jaxlib ships) is compiled here, registered with both libraries under
different names and called eagerly, under jit and vmap; jaxprs and lowered StableHLO print the
same; JAX's errors."""
import ctypes
import difflib
import functools
import inspect
import os
import shutil
import subprocess
import textwrap

import jax
import jax.ffi
import numpy as np
import pytest

import arrax
import arrax.ffi
from tests.oracle import assert_prints_like_jax, assert_same, rand, run_printed

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include "xla/ffi/api/c_api.h"

/* Handlers written against XLA's FFI C API (no C++ needed). */

static XLA_FFI_Error* metadata(XLA_FFI_CallFrame* frame) {
  XLA_FFI_Metadata_Extension* ext = (XLA_FFI_Metadata_Extension*)frame->extension_start;
  ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  ext->metadata->api_version.extension_start = NULL;
  ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
  ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
  ext->metadata->traits = 0;
  return NULL;
}

static int is_metadata_query(XLA_FFI_CallFrame* frame) {
  return frame->extension_start != NULL &&
         frame->extension_start->type == XLA_FFI_Extension_Metadata;
}

static XLA_FFI_Error* error(XLA_FFI_CallFrame* frame, const char* message) {
  XLA_FFI_Error_Create_Args args;
  memset(&args, 0, sizeof(args));
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message;
  args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
  return frame->api->XLA_FFI_Error_Create(&args);
}

static XLA_FFI_Scalar* attr(XLA_FFI_CallFrame* frame, const char* name) {
  for (int64_t i = 0; i < frame->attrs.size; ++i) {
    XLA_FFI_ByteSpan* n = frame->attrs.names[i];
    if (frame->attrs.types[i] == XLA_FFI_AttrType_SCALAR && n->len == strlen(name) &&
        memcmp(n->ptr, name, n->len) == 0)
      return (XLA_FFI_Scalar*)frame->attrs.attrs[i];
  }
  return NULL;
}

static int64_t count(XLA_FFI_Buffer* b) {
  int64_t n = 1;
  for (int64_t i = 0; i < b->rank; ++i) n *= b->dims[i];
  return n;
}

/* y = x * factor (float32; attribute factor: f32) */
XLA_FFI_Error* Scale(XLA_FFI_CallFrame* frame) {
  if (is_metadata_query(frame)) return metadata(frame);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  XLA_FFI_Scalar* factor = attr(frame, "factor");
  if (frame->args.size != 1 || frame->rets.size != 1 || factor == NULL ||
      factor->dtype != XLA_FFI_DataType_F32)
    return error(frame, "Scale takes one f32 array and an f32 attribute `factor`");
  XLA_FFI_Buffer* x = (XLA_FFI_Buffer*)frame->args.args[0];
  XLA_FFI_Buffer* y = (XLA_FFI_Buffer*)frame->rets.rets[0];
  if (x->dtype != XLA_FFI_DataType_F32) return error(frame, "Scale: x must be float32");
  float f = *(float*)factor->value;
  for (int64_t i = 0, n = count(x); i < n; ++i) ((float*)y->data)[i] = ((float*)x->data)[i] * f;
  return NULL;
}

/* (a + b * offset, a - b) for int32 arrays of one size; attribute offset: i64 >= 0 */
XLA_FFI_Error* AddSub(XLA_FFI_CallFrame* frame) {
  if (is_metadata_query(frame)) return metadata(frame);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  XLA_FFI_Scalar* offset = attr(frame, "offset");
  if (frame->args.size != 2 || frame->rets.size != 2 || offset == NULL ||
      offset->dtype != XLA_FFI_DataType_S64)
    return error(frame, "AddSub takes two int32 arrays and an i64 attribute `offset`");
  int64_t k = *(int64_t*)offset->value;
  if (k < 0) return error(frame, "offset must be >= 0");
  XLA_FFI_Buffer* a = (XLA_FFI_Buffer*)frame->args.args[0];
  XLA_FFI_Buffer* b = (XLA_FFI_Buffer*)frame->args.args[1];
  int32_t* s = (int32_t*)((XLA_FFI_Buffer*)frame->rets.rets[0])->data;
  int32_t* d = (int32_t*)((XLA_FFI_Buffer*)frame->rets.rets[1])->data;
  for (int64_t i = 0, n = count(a); i < n; ++i) {
    s[i] = ((int32_t*)a->data)[i] + ((int32_t*)b->data)[i] * (int32_t)k;
    d[i] = ((int32_t*)a->data)[i] - ((int32_t*)b->data)[i];
  }
  return NULL;
}

/* Counts its calls (a side effect) and returns the count (int32 scalar). */
static int64_t calls = 0;
int64_t get_calls(void) { return calls; }
XLA_FFI_Error* Count(XLA_FFI_CallFrame* frame) {
  if (is_metadata_query(frame)) return metadata(frame);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
  ((int32_t*)((XLA_FFI_Buffer*)frame->rets.rets[0])->data)[0] = (int32_t)(++calls);
  return NULL;
}
"""

COMPILER = shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
  if COMPILER is None:
    pytest.skip("no C compiler found to build the FFI test handlers")
  d = tmp_path_factory.mktemp("ffi")
  src, so = d / "handlers.c", d / "libhandlers.so"
  src.write_text(SOURCE)
  assert arrax.ffi.include_dir() == jax.ffi.include_dir()
  subprocess.run([COMPILER, "-std=c11", "-O1", "-shared", "-fPIC", "-Wall", "-Werror",
                  "-I", arrax.ffi.include_dir(), str(src), "-o", str(so)], check=True)
  h = ctypes.cdll.LoadLibrary(str(so))
  h.get_calls.restype = ctypes.c_int64
  for name in ("Scale", "AddSub", "Count"):
    jax.ffi.register_ffi_target(f"jax_{name}", jax.ffi.pycapsule(getattr(h, name)))
    arrax.ffi.register_ffi_target(f"arrax_{name}", arrax.ffi.pycapsule(getattr(h, name)),
                                  platform="cpu")
  return h


def _scopes(**extra):
  return ({"T": lambda n: f"jax_{n}", **extra}, {"T": lambda n: f"arrax_{n}", **extra})


def prints_like_jax(code, prelude=""):
  js, as_ = _scopes()
  try:
    return assert_prints_like_jax(code, PRELUDE + prelude, jax_scope=js, arrax_scope=as_)
  except AssertionError:
    full = textwrap.dedent(PRELUDE + prelude) + textwrap.dedent(code)
    common = {"np": np, "partial": functools.partial}
    want = run_printed(full, {**common, "jax": jax, "jnp": jax.numpy, **js})
    got = run_printed(full, {**common, "jax": arrax, "jnp": arrax.numpy, **as_})
    raise AssertionError("\n".join(difflib.unified_diff(
        want.splitlines(), got.splitlines(), "jax", "arrax", lineterm=""))) from None


PRELUDE = """
S = jax.ShapeDtypeStruct
def scale(x, factor=2.0, **kw):
  return jax.ffi.ffi_call(T("Scale"), S(x.shape, x.dtype), **kw)(x, factor=np.float32(factor))
def addsub(a, b, offset=1, seq=False, **kw):
  res = (S(a.shape, a.dtype), S(a.shape, a.dtype))
  return jax.ffi.ffi_call(T("AddSub"), list(res) if seq else res, **kw)(a, b, offset=offset)
def show(text):
  print(str(text).replace(T("Scale"), "SCALE").replace(T("AddSub"), "ADDSUB")
        .replace(T("Count"), "COUNT"))
"""

NAMES = sorted(n for n in dir(jax.ffi) if not n.startswith("_"))


def test_names_and_signatures():
  assert sorted(n for n in dir(arrax.ffi) if not n.startswith("_")) == NAMES
  assert arrax.ffi is arrax.ffi
  for n in NAMES:
    ours, theirs = inspect.signature(getattr(arrax.ffi, n)), inspect.signature(
        getattr(jax.ffi, n))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
           [(p.name, p.kind, p.default) for p in theirs.parameters.values()], n


def test_include_dir_has_ffi_headers():
  assert os.path.isfile(os.path.join(arrax.ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))


def test_pycapsule(lib):
  cap = arrax.ffi.pycapsule(lib.Scale)
  assert type(cap).__name__ == "PyCapsule"
  assert type(cap) is type(jax.ffi.pycapsule(lib.Scale))


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_scale_values(lib, shape, mode):
  x = rand(shape, np.float32, seed=3)
  outs = []
  for mod, name in ((jax, "jax_Scale"), (arrax, "arrax_Scale")):
    def f(x, mod=mod, name=name):
      return mod.ffi.ffi_call(name, mod.ShapeDtypeStruct(x.shape, x.dtype))(
          x, factor=np.float32(-1.5))
    f = mod.jit(f) if mode == "jit" else f
    outs.append(f(mod.numpy.asarray(x)))
  assert_same(outs[1], outs[0])
  np.testing.assert_array_equal(np.asarray(outs[1]), x * np.float32(-1.5))


@pytest.mark.parametrize("seq", [False, True])
def test_multiple_results(lib, seq):
  prints_like_jax(f"""
  a = jnp.arange(6, dtype=jnp.int32).reshape(2, 3)
  b = jnp.full((2, 3), 2, jnp.int32)
  for g in (addsub, jax.jit(addsub, static_argnames=("offset", "seq"))):
    out = g(a, b, offset=3, seq={seq})
    print(type(out).__name__, [(o.dtype, o.shape, np.asarray(o).tolist()) for o in out])
  """)


def test_jaxprs_like_jax(lib):
  prints_like_jax("""
  x = jnp.arange(6.0).reshape(2, 3)
  show(jax.make_jaxpr(scale)(x))
  show(jax.make_jaxpr(lambda x: scale(x, has_side_effect=True))(x))
  show(jax.make_jaxpr(lambda a: addsub(a, a, offset=2, seq=True))(jnp.ones(3, jnp.int32)))
  show(jax.make_jaxpr(lambda x: scale(x, input_layouts=[(1, 0)], output_layouts=(1, 0)))(x))
  """)


def test_lowering_like_jax(lib):
  prints_like_jax("""
  x = jnp.arange(6.0).reshape(2, 3)
  def f(x):
    return scale(x)
  show(jax.jit(f).lower(x).as_text())
  def g(x):
    return scale(x, has_side_effect=True, input_layouts=[(1, 0)], output_layouts=(1, 0))
  show(jax.jit(g).lower(x).as_text())
  def h(x):
    return jax.ffi.ffi_call("legacy", S(x.shape, x.dtype), custom_call_api_version=2,
                            legacy_backend_config="abc")(x)
  show(jax.jit(h).lower(x).as_text())
  def k(x):
    return jax.ffi.ffi_call("attrs", S(x.shape, x.dtype))(
        x, a=1, b=2.0, c="s", d=np.int8(3), e=np.arange(3, dtype=np.int32), g=True,
        h=np.float64(1), i=(1, 2), j={"k": 1}, u=np.uint16(7), bf=np.float16(0.5))
  show(jax.jit(k).lower(x).as_text())
  def m(a):
    return addsub(a, a + 1, offset=2, input_output_aliases={1: 0})
  show(jax.jit(m).lower(jnp.ones(3, jnp.int32)).as_text())
  def n(x):
    return scale(x, input_output_aliases={0: 0})
  print(jax.jit(n)(x))
  """)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_methods(lib, method):
  prints_like_jax(f"""
  x = jnp.arange(12.0).reshape(4, 3)
  f = jax.vmap(lambda x: scale(x, vmap_method={method!r}))
  print(f(x))
  print(jax.jit(f)(x))
  show(jax.make_jaxpr(f)(x))
  a = jnp.arange(8, dtype=jnp.int32).reshape(4, 2)
  b = jnp.array([1, 2, 3, 4], jnp.int32)
  g = jax.vmap(lambda a, b: addsub(a, b, offset=2, vmap_method={method!r}), in_axes=(1, None))
  if {method!r} in ("sequential", "sequential_unrolled", "broadcast_all"):
    print(g(a, b))   # (the others hand the handler operands of different shapes)
  show(jax.make_jaxpr(g)(a, b))
  g2 = jax.vmap(lambda a, b: addsub(a, b, offset=2, vmap_method={method!r}), in_axes=(1, 0))
  print(g2(a, jnp.arange(8, dtype=jnp.int32).reshape(2, 4)))
  """)


def test_vmap_method_none_raises(lib):
  prints_like_jax("""
  x = jnp.arange(12.0).reshape(4, 3)
  try:
    jax.vmap(scale)(x)
  except NotImplementedError as e:
    print("raised", type(e).__name__, str(e))
  """)


def test_errors_like_jax(lib):
  prints_like_jax("""
  x = jnp.arange(6.0).reshape(2, 3)
  def attempt(thunk):
    try:
      thunk()
    except Exception as e:
      print("raised", type(e).__name__, str(e).replace(T("Scale"), "SCALE"))
  attempt(lambda: jax.grad(lambda x: scale(x).sum())(x))
  attempt(lambda: jax.jvp(scale, (x,), (x,)))
  attempt(lambda: jax.ffi.ffi_call(T("Scale"), S((2,), jnp.float32), vmap_method="bad"))
  attempt(lambda: jax.ffi.ffi_call(T("Scale"), S((2,), jnp.float32),
                                   legacy_backend_config="x"))
  attempt(lambda: jax.ffi.ffi_call(T("Scale"), [1, 2])(x))
  attempt(lambda: scale(x, input_layouts=[(0, 1), (1, 0)]))
  attempt(lambda: scale(x, input_output_aliases={1: 0}))
  attempt(lambda: scale(x, input_output_aliases={0: 1}))
  attempt(lambda: scale(x, input_output_aliases={0: 0}, input_layouts=[(0, 1)]))
  attempt(lambda: jax.ffi.ffi_call(T("Scale"), S((3,), jnp.float32),
                                   input_output_aliases={0: 0})(x, factor=np.float32(1)))
  attempt(lambda: scale(x, bad=np.zeros(2)) if False else
          jax.ffi.ffi_call(T("Scale"), S(x.shape, x.dtype))(x, factor=[1.0]))
  attempt(lambda: jax.ffi.register_ffi_type_id("t", None))
  """)


def test_runtime_error_from_handler(lib):
  a = np.ones(3, np.int32)
  errs = []
  for mod, name in ((jax, "jax_AddSub"), (arrax, "arrax_AddSub")):
    r = (mod.ShapeDtypeStruct((3,), np.int32),) * 2
    with pytest.raises(Exception) as e:   # noqa: PT011
      mod.block_until_ready(mod.ffi.ffi_call(name, r)(a, a, offset=-1))
    errs.append(e.value)
  assert type(errs[1]).__name__ == type(errs[0]).__name__
  assert "offset must be >= 0" in str(errs[1])


def test_side_effect_kept_when_unused(lib):
  for mod, name in ((jax, "jax_Count"), (arrax, "arrax_Count")):
    r = mod.ShapeDtypeStruct((), np.int32)

    def f(x, eff, mod=mod, name=name, r=r):
      mod.ffi.ffi_call(name, r, has_side_effect=eff)()
      return x + 1
    before = lib.get_calls()
    mod.jit(f, static_argnums=1)(1.0, True).block_until_ready()
    assert lib.get_calls() == before + 1, mod.__name__
    mod.jit(f, static_argnums=1)(1.0, False).block_until_ready()
    assert lib.get_calls() == before + 1, mod.__name__   # unused, no side effect: dropped
  prints_like_jax("""
  f = lambda x, eff: (jax.ffi.ffi_call(T("Count"), S((), jnp.int32), has_side_effect=eff)(), x)[1]
  show(jax.make_jaxpr(f, static_argnums=1)(1.0, True))
  show(jax.make_jaxpr(f, static_argnums=1)(1.0, False))
  """)


def test_custom_lowering_with_ffi_lowering(lib):
  """ffi_lowering / build_ffi_lowering_function as a primitive's lowering rule."""
  outs = []
  for mod, name in ((jax, "jax_Scale"), (arrax, "arrax_Scale")):
    if mod is jax:
      from jax.extend.core import Primitive
      from jax.interpreters import mlir as m
    else:
      from arrax.extend.core import Primitive
      from arrax.interpreters import mlir as m
    p = Primitive(f"my_scale_{mod.__name__}")
    p.def_abstract_eval(lambda x, **kw: x)
    m.register_lowering(p, mod.ffi.ffi_lowering(name), platform="cpu")
    x = np.arange(4.0, dtype=np.float32)
    outs.append(mod.jit(lambda x, p=p: p.bind(x, factor=np.float32(3)))(x))
    text = mod.jit(lambda x, p=p: p.bind(x, factor=np.float32(3))).lower(x).as_text()
    outs.append(text.replace(name, "T").replace(f"my_scale_{mod.__name__}", "P"))
  assert_same(outs[2], outs[0])
  assert outs[3] == outs[1]
