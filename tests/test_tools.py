"""arrax.tools.jax_to_ir, arrax.tools.pgo_nsys_converter and arrax.experimental.sparse.test_util,
against JAX 0.10.2's modules: the same HLO (text and proto), the same CLI outputs and errors, the
same converted costs file, the same random sparse arrays for the same NumPy seed."""
import importlib.util
import os
import pathlib
import re
import runpy
import subprocess
import sys
import textwrap
import unittest

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax.experimental import sparse as jsparse
from jax.experimental.sparse import test_util as jsu
from jax.tools import jax_to_ir as jir
from jaxlib import _hlo

import arrax
import arrax.numpy as anp
from arrax.experimental import sparse as asparse
from arrax.experimental.sparse import test_util as asu
from arrax.tools import jax_to_ir as air

from oracle import same_exception, raised

ROOT = pathlib.Path(arrax.__file__).parent.parent


# ---- jax_to_ir -------------------------------------------------------------------------------
def _elementwise(np):
  def fn(a, b):
    return np.sin(a) * b + 1
  return fn


def _dot(np):
  def fn(x, y, z):
    return np.dot(x, y) / z
  return fn


def _tuple(np):
  def fn(a, b):
    return np.tanh(a) + b, (a * 2, np.sum(a))
  return fn


def _const_array(np):
  def fn(x, w):
    return np.matmul(x, w).astype(np.int32)
  return fn


HLO_CASES = {
    "elementwise": (_elementwise, [("a", "f32[2,3]"), ("b", "f32[]")], None),
    "dot_const": (_dot, [("y", "f32[4,3]"), ("x", "f32[2,4]")], {"z": 3.14159}),
    "tuple_out": (_tuple, [("a", "f32[3]"), ("b", "f32[3]")], None),
    "int_const": (_dot, [("y", "s32[4,3]"), ("x", "s32[2,4]")], {"z": 7}),
    "array_const": (_const_array, [("x", "f32[2,2]")],
                    {"w": np.array([[1., 2.], [3., 4.]], np.float32)}),
}


def _proto_text(proto, metadata=True):
  """The HLO module of a serialized proto, printed with its metadata; source lines and columns
  (where each library's frames are) dropped."""
  opts = _hlo.HloPrintOptions.short_parsable()
  opts.print_metadata = metadata
  text = _hlo.HloModule.from_serialized_hlo_module_proto(proto).to_string(opts)
  return re.sub(r"line=\d+ end_line=\d+ column=\d+ end_column=\d+", "", text)


@pytest.mark.parametrize("name", list(HLO_CASES))
def test_jax_to_hlo_matches_jax(name):
  make, shapes, constants = HLO_CASES[name]
  outs = {}
  for mod, np_ in ((jir, jnp), (air, anp)):
    in_shapes = [(n, mod.parse_shape_str(s)) for n, s in shapes]
    outs[mod] = mod.jax_to_hlo(make(np_), in_shapes, constants=constants)
  (jproto, jtext), (aproto, atext) = outs[jir], outs[air]
  assert isinstance(aproto, bytes) and isinstance(atext, str)
  assert "HloModule jit_ordered_wrapper" in atext
  assert atext == jtext
  assert _proto_text(aproto, False) == _proto_text(jproto, False)
  if name != "tuple_out":
    # (with the metadata too; in a reduction's reducer arrax's parameters are named
    # "jit(ordered_wrapper)/reduce_sum" where JAX's are "reduce_sum")
    assert _proto_text(aproto) == _proto_text(jproto)
  # (the same for jax_to_ir itself)
  in_shapes = [(n, air.parse_shape_str(s)) for n, s in shapes]
  assert air.jax_to_ir(make(anp), in_shapes, constants=constants, format="HLO")[1] == atext


def test_jax_to_hlo_runs():
  # The proto is a complete program: XLA parses it back and arrax's own lowering ran it.
  shapes = [("y", "f32[4,3]"), ("x", "f32[2,4]")]
  proto, _ = air.jax_to_hlo(_dot(anp), [(n, air.parse_shape_str(s)) for n, s in shapes],
                            constants={"z": 2.0})
  module = _hlo.HloModule.from_serialized_hlo_module_proto(proto)
  assert module.name == "jit_ordered_wrapper"
  x = np.arange(8, dtype=np.float32).reshape(2, 4)
  y = np.ones((4, 3), np.float32)
  np.testing.assert_allclose(arrax.jit(_dot(anp))(x, y, 2.0), x @ y / 2)


def test_parse_shape_str():
  assert list(air._DT) == list(jir._DT)
  for key in jir._DT:
    for dims in ("[]", "[3]", "[ 2, 3 ]", "[1,0,4]"):
      s = key + dims
      j, a = jir.parse_shape_str(s), air.parse_shape_str(s)
      assert type(a) is arrax.core.ShapedArray
      assert a.shape == j.shape and a.dtype == j.dtype, s
  for bad in ("f33[2]", "f32(2)", "f32[2,x]", "float32[2]"):
    e = same_exception(lambda: air.parse_shape_str(bad), raised(lambda: jir.parse_shape_str(bad)),
                       match=(f"Invalid shape {bad}", "Valid example"))
    assert str(e) == str(raised(lambda: jir.parse_shape_str(bad)))


def test_jax_to_ir_errors():
  f = lambda x, y: x + y
  def shapes(mod):
    return [("x", mod.parse_shape_str("f32[2]")), ("y", mod.parse_shape_str("f32[2]"))]
  for constants in ({"x": 1.0}, {"y": 1.0, "x": 2.0}):
    jexc = raised(lambda: jir.jax_to_hlo(f, shapes(jir), constants=constants))
    e = same_exception(lambda: air.jax_to_hlo(f, shapes(air), constants=constants), jexc,
                       match=("Arguments appear in both `input_shapes` and `constants`",))
    assert str(e) == str(jexc)
  # an unknown format
  same_exception(lambda: air.jax_to_ir(f, shapes(air), format="XLA"),
                 raised(lambda: jir.jax_to_ir(f, shapes(jir), format="XLA")))
  # jax_to_tf without TensorFlow (arrax has no jax2tf either: a ValueError in every case)
  e = raised(lambda: air.jax_to_tf(f, shapes(air)))
  assert isinstance(e, ValueError) and "Conversion to TF graph requires" in str(e)
  if importlib.util.find_spec("tensorflow") is None:
    jexc = raised(lambda: jir.jax_to_tf(f, shapes(jir)))
    assert str(e) == str(jexc)


def test_module_names():
  import types
  ours = {n for n in vars(air) if not n.startswith("_")}
  theirs = {n for n, v in vars(jir).items() if not n.startswith("_")
            and not isinstance(v, types.ModuleType) and getattr(v, "__module__", None) in
            (jir.__name__, "functools")}   # (the names JAX's module defines)
  assert theirs <= ours, theirs - ours
  import inspect
  assert str(inspect.signature(air.jax_to_ir)) == str(inspect.signature(jir.jax_to_ir))
  assert air.jax_to_hlo.keywords == jir.jax_to_hlo.keywords == {"format": "HLO"}
  assert air.jax_to_tf.keywords == jir.jax_to_tf.keywords == {"format": "TF"}


PROG = """
import {np} as np

def fn(x, y, z, w):
  return np.dot(x, y) / z + w.sum()
"""


def _run(args, env_extra=None, cwd=None):
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             PYTHONPATH=os.pathsep.join([str(cwd), str(ROOT)]), **(env_extra or {}))
  return subprocess.run([sys.executable] + args, env=env, cwd=cwd, capture_output=True,
                        text=True, timeout=300)


def test_jax_to_ir_cli(tmp_path):
  (tmp_path / "jprog.py").write_text(PROG.format(np="jax.numpy"))
  (tmp_path / "aprog.py").write_text(PROG.format(np="arrax.numpy"))
  out = {}
  for lib in ("jax", "arrax"):
    proc = _run(["-m", f"{lib}.tools.jax_to_ir", f"--fn={lib[0]}prog.fn",
                 "--input_shapes=[('y', 'f32[4,3]'), ('x', 'f32[2,4]')]",
                 "--constants={'z': 3.5}", "--evaled_constants={'w': '[1, 2, 3]'}",
                 f"--ir_dest={tmp_path / lib}.pb", f"--ir_human_dest={tmp_path / lib}.txt"],
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out[lib] = ((tmp_path / f"{lib}.pb").read_bytes(), (tmp_path / f"{lib}.txt").read_text())
  assert out["arrax"][1] == out["jax"][1]
  assert "s32[3]" in out["arrax"][1]   # (the list constant became an int32 array)
  # (without the metadata: see test_jax_to_hlo_matches_jax)
  assert _proto_text(out["arrax"][0], False) == _proto_text(out["jax"][0], False)


CLI_ERRORS = {
    # (extra flags, a line JAX's absl prints)
    "no_dest": (["--fn=prog.fn", "--input_shapes=[]"],
                "At least one of --ir_dest and --ir_human_dest is required."),
    "no_fn": (["--input_shapes=[]", "--ir_dest=x"], "Flag --fn must have a value other than None"),
    "positional": (["--fn=prog.fn", "--input_shapes=[]", "--ir_dest=x", "extra"],
                   "No positional arguments are accepted."),
    "both_constants": (["--fn=prog.fn", "--input_shapes=[]", "--ir_dest=x",
                        "--constants={'z': 1}", "--evaled_constants={'z': '2'}"],
                       "Argument appears in both --constants and --evaled_constants: z"),
}


@pytest.mark.parametrize("case", list(CLI_ERRORS))
def test_jax_to_ir_cli_errors(case, tmp_path):
  (tmp_path / "prog.py").write_text("def fn(**kw):\n  return 0.\n")
  flags, line = CLI_ERRORS[case]
  for lib in ("jax", "arrax"):
    proc = _run(["-m", f"{lib}.tools.jax_to_ir"] + flags, cwd=tmp_path)
    assert proc.returncode != 0, (lib, proc.stdout)
    assert line in proc.stderr + proc.stdout, (lib, proc.stderr)


def test_jax_to_ir_imports_without_absl():
  code = textwrap.dedent("""
      import sys
      sys.modules["absl"] = None   # (absl cannot be imported)
      import arrax.numpy as np
      from arrax.tools import jax_to_ir as m
      proto, text = m.jax_to_hlo(lambda x: np.cos(x), [("x", m.parse_shape_str("f32[2]"))])
      print("cosine" in text, "absl" in sys.modules and sys.modules["absl"] is None)
      try:
        m.main(["prog"])
      except ImportError as e:
        print("ImportError")
      """)
  proc = _run(["-c", code], cwd=ROOT)
  assert proc.returncode == 0, proc.stderr
  assert proc.stdout.split() == ["True", "True", "ImportError"]


# ---- pgo_nsys_converter ----------------------------------------------------------------------
FAKE_NSYS = """#!/bin/sh
# a fake `nsys`: `stats --help-reports` lists the reports; `stats ... --report R PROFILE -o OUT`
# writes $FAKE_NSYS_CSV to OUT_R.csv (as nsys names its CSV output)
if [ "$2" = "--help-reports" ]; then echo "$FAKE_NSYS_REPORTS"; exit 0; fi
report=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in --report) report="$2"; shift;; -o) out="$2"; shift;; esac; shift
done
echo "fake nsys: $report"
cp "$FAKE_NSYS_CSV" "${out}_${report}.csv"
"""

NSYS_CSV = """\
Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,NVTX Range
40.0,4000,2,2000.5,2000,1000,3000,10,PushPop,XlaModule:#hlo_module=jit_f,program_id=1#
30.0,3000,1,3000.0,3000,3000,3000,0,PushPop,Thunk:#hlo_op=fusion.1#
10.0,1000,1,1250.0,1000,1000,1000,0,PushPop,Thunk:#hlo_op=fusion.1#
10.0,1000,1,777,1000,1000,1000,0,PushPop,Thunk:#hlo_op=custom-call.2#
5.0,500,1,12.5,500,500,500,0,PushPop,Thunk:#name=other#
2.0,200,1,99.25,500,500,500,0,PushPop,Thunk:#hlo_op=all-reduce.3#
"""
JAX_PGO = pathlib.Path(jax.__file__).parent / "tools" / "pgo_nsys_converter.py"


def _convert(run, tmp, lib, reports, capfd, monkeypatch):
  """Run one converter on a fresh copy of the fake profile; (output text, stdout, files left)."""
  prof, out = tmp / lib / "prof", tmp / lib / "out"
  prof.mkdir(parents=True)
  out.mkdir()
  (prof / "run.nsys-rep").write_text("")
  (prof / "run.sqlite").write_text("")   # (removed by the converter)
  (out / "stale.csv").write_text("")     # (likewise)
  monkeypatch.setenv("FAKE_NSYS_REPORTS", reports)
  monkeypatch.setattr(sys, "argv", ["pgo_nsys_converter.py", "--profile_path",
                                    str(prof / "run.nsys-rep"), "--pgle_output_path",
                                    str(out / "costs.pbtxt")])
  capfd.readouterr()
  run()
  stdout = capfd.readouterr().out.replace(str(tmp / lib), "<dir>")
  left = sorted(p.name for p in (tmp / lib).rglob("*") if p.is_file())
  return (out / "costs.pbtxt").read_text(), stdout, left


@pytest.mark.parametrize("reports", ["nvtx_sum nvtx_kern_sum cuda_gpu_trace",
                                     "nvtxsum nvtxkernsum"])
def test_pgo_nsys_converter_matches_jax(reports, tmp_path, capfd, monkeypatch):
  from arrax._src.pgo_nsys_converter import _main
  bin_dir = tmp_path / "bin"
  bin_dir.mkdir()
  (bin_dir / "nsys").write_text(FAKE_NSYS)
  (bin_dir / "nsys").chmod(0o755)
  (tmp_path / "in.csv").write_text(NSYS_CSV)
  monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
  monkeypatch.setenv("FAKE_NSYS_CSV", str(tmp_path / "in.csv"))
  got = _convert(_main, tmp_path, "arrax", reports, capfd, monkeypatch)
  want = _convert(lambda: runpy.run_path(str(JAX_PGO), run_name="__main__"), tmp_path, "jax",
                  reports, capfd, monkeypatch)
  assert got == want
  costs, stdout, left = got
  assert costs == ('costs { name: "fusion.1" cost_us: 3.0 }\n'
                   'costs { name: "custom-call.2" cost_us: 0.777 }\n'
                   'costs { name: "all-reduce.3" cost_us: 0.09925 }\n')
  report = "nvtx_kern_sum" if "nvtx_kern_sum" in reports else "nvtxkernsum"
  assert f"'--report', '{report}'" in stdout and f"fake nsys: {report}" in stdout
  assert left == ["costs.pbtxt", "run.nsys-rep"]


def test_pgo_nsys_converter_cli(tmp_path):
  # `python -m arrax.tools.pgo_nsys_converter`: argparse's help as JAX's script prints it, and
  # no nsys on PATH fails as JAX's does (an AssertionError).
  outs = []
  for cmd in (["-m", "arrax.tools.pgo_nsys_converter"], [str(JAX_PGO)]):
    proc = _run(cmd + ["--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    outs.append(proc.stdout)
    proc = _run(cmd + ["--profile_path", "p.nsys-rep"], cwd=tmp_path,
                env_extra={"PATH": str(tmp_path)})
    assert proc.returncode != 0 and "AssertionError" in proc.stderr
  assert outs[0] == outs[1]
  assert "--pgle_output_path" in outs[0] and "--post_process" in outs[0]


# ---- experimental.sparse.test_util -----------------------------------------------------------
def _bufs(x):
  return [np.asarray(b) for b in jax.tree_util.tree_leaves(x)] if isinstance(
      x, jsparse.JAXSparse) else [np.asarray(b) for b in arrax.tree_util.tree_leaves(x)]


SPARSE_CASES = [("bcoo", (3, 4), 0, 0, 0.5), ("bcoo", (2, 3, 4), 1, 0, 0.3),
                ("bcoo", (2, 3, 4, 2), 1, 1, 3), ("bcoo", (5,), 0, 0, 0),
                ("bcsr", (3, 4), 0, 0, 0.5), ("bcsr", (2, 3, 4), 1, 0, 5)]


@pytest.mark.parametrize("fmt,shape,n_batch,n_dense,nse", SPARSE_CASES)
def test_rand_sparse_formats_match_jax(fmt, shape, n_batch, n_dense, nse):
  for dtype in (np.float32, np.int32, np.complex64, np.uint8):
    x = {}
    for mod in (jsu, asu):
      gen = getattr(mod, "rand_" + fmt)(np.random.RandomState(3), nse=nse, n_batch=n_batch,
                                        n_dense=n_dense)
      x[mod] = gen(shape, dtype)
    j, a = x[jsu], x[asu]
    assert type(a) is getattr(asparse, fmt.upper())
    assert (a.shape, a.nse, a.n_batch, a.n_dense) == (j.shape, j.nse, j.n_batch, j.n_dense)
    for bj, ba in zip(_bufs(j), _bufs(a), strict=True):
      assert (ba.dtype, ba.shape) == (bj.dtype, bj.shape)
      np.testing.assert_array_equal(ba, bj)
    np.testing.assert_array_equal(np.asarray(a.todense()), np.asarray(j.todense()))


def test_rand_sparse_errors_and_other_generators():
  for fmt, shape, kw in (("bcoo", (3,), dict(n_batch=2)), ("bcsr", (3,), {}),
                         ("bcsr", (2, 3, 4), dict(n_dense=0)), ("bcoo", (3,), dict(n_dense=-1))):
    jexc = raised(lambda: getattr(jsu, "rand_" + fmt)(np.random.RandomState(0), **kw)(
        shape, np.float32))
    e = same_exception(lambda: getattr(asu, "rand_" + fmt)(np.random.RandomState(0), **kw)(
        shape, np.float32), jexc)
    assert str(e) == str(jexc)
  # other value generators: jtu's rand_* with the same draws
  from jax._src import test_util as jtu
  from arrax._src import test_util as atu
  for name in ("rand_default", "rand_nonzero", "rand_positive", "rand_small", "rand_uniform"):
    for dtype in (np.float32, np.int8, np.complex64, np.uint16):
      j = getattr(jtu, name)(np.random.RandomState(1))((3, 2), dtype)
      a = getattr(atu, name)(np.random.RandomState(1))((3, 2), dtype)
      assert type(a) is type(j) and a.dtype == j.dtype
      np.testing.assert_array_equal(a, j)
    j = jsu.rand_bcoo(np.random.RandomState(2), rand_method=getattr(jtu, name))((3, 4),
                                                                              np.float32)
    a = asu.rand_bcoo(np.random.RandomState(2), rand_method=getattr(atu, name))((3, 4),
                                                                              np.float32)
    np.testing.assert_array_equal(np.asarray(a.data), np.asarray(j.data))
  for nse in (0.3, 4, 0, 100):
    for post in (lambda x: x, lambda x: 2 * x):
      j = jsu.rand_sparse(np.random.RandomState(4), nse=nse, post=post)((4, 5), np.float32)
      a = asu.rand_sparse(np.random.RandomState(4), nse=nse, post=post)((4, 5), np.float32)
      assert type(a) is type(j) is np.ndarray and a.dtype == j.dtype
      np.testing.assert_array_equal(a, j)


def test_layouts_and_constants():
  for shape in ((), (3,), (2, 3), (2, 3, 4, 5)):
    for m in (0, 1, 2):
      assert list(asu.iter_sparse_layouts(shape, m)) == list(jsu.iter_sparse_layouts(shape, m))
      assert list(asu.iter_bcsr_layouts(shape, m)) == list(jsu.iter_bcsr_layouts(shape, m))
  assert list(asu.iter_subsets("abc")) == list(jsu.iter_subsets("abc"))
  assert asu.SparseLayout._fields == jsu.SparseLayout._fields
  assert asu.BatchedDotGeneralProperties._fields == jsu.BatchedDotGeneralProperties._fields
  assert asu.MATMUL_TOL == jsu.MATMUL_TOL
  x = asparse.BCOO.fromdense(anp.eye(2))
  assert asu.is_sparse(x) and not asu.is_sparse(x.todense())
  assert asu.is_sparse(asparse.BCSR.fromdense(anp.eye(2)))


def _cases(su, np_, sp):
  """The same SparseTestCase subclass for either library."""
  class Case(su.SparseTestCase):
    def test_against_dense(self):
      M = su.rand_bcoo(self.rng())((3, 4), np.float32)
      v = self.rng().randn(4).astype(np.float32)
      self._CheckAgainstDense(lambda m, v: m @ v, lambda m, v: m @ v, lambda: [M, v])

    def test_against_dense_fails(self):
      M = su.rand_bcoo(self.rng())((3, 4), np.float32)
      with self.assertRaises(AssertionError):
        self._CheckAgainstDense(lambda m: m * 2, lambda m: m * 3, lambda: [M], check_jit=False)

    def test_grads(self):
      M = su.rand_bcoo(self.rng())((3, 4), np.float32)
      v = self.rng().randn(4).astype(np.float32)
      self._CheckGradsSparse(lambda m, v: m @ v, lambda m, v: m @ v, lambda: [M, v],
                             atol=1e-5, rtol=1e-5)

    def test_batching(self):
      M = su.rand_bcoo(self.rng(), n_batch=1)((2, 3, 4), np.float32)
      self._CheckBatchingSparse(lambda m: m.sum(-1),
                                lambda m: sp.sparsify(lambda x: x.sum(-1))(m), lambda: [M])

    def test_equivalent(self):
      x = su.rand_bcoo(self.rng())((3, 4), np.float32)
      y = su.rand_bcoo(self.rng())((3, 4), np.float32)
      self.assertSparseArraysEquivalent(x, x)
      with self.assertRaises(AssertionError):   # (different values)
        self.assertSparseArraysEquivalent(x, y)
      with self.assertRaises(AssertionError):   # (different formats)
        self.assertSparseArraysEquivalent(x, sp.BCSR.fromdense(x.todense()))
      xi = sp.BCOO((x.data.astype(np.int32), x.indices), shape=x.shape)
      with self.assertRaises(AssertionError):   # (different dtypes)
        self.assertSparseArraysEquivalent(x, xi)
      self.assertSparseArraysEquivalent(x, xi, check_dtypes=False, atol=10)

    def test_all_close(self):
      self.assertAllClose({"a": (np.float32(1), [2.0])}, {"a": (np_.float32(1), [2.0])})
      with self.assertRaises(AssertionError):
        self.assertAllClose([1.0, 2.0], [1.0, 2.1])
      with self.assertRaises(AssertionError):
        self.assertAllClose(np_.ones(2, np.float32), np.ones(2, np.int32))
      self.assertArraysEqual(np_.arange(3), np.arange(3))
  return Case


def _run_cases(case):
  result = unittest.TestResult()
  unittest.TestLoader().loadTestsFromTestCase(case).run(result)
  return result


def test_sparse_test_case():
  a = _run_cases(_cases(asu, anp, asparse))
  assert a.testsRun == 6 and not a.failures and not a.errors, a.failures + a.errors
  # (and the same checks pass under JAX's SparseTestCase: the expectations are JAX's)
  j = _run_cases(_cases(jsu, jnp, jsparse))
  assert j.testsRun == 6 and not j.failures and not j.errors, j.failures + j.errors


def test_sparse_test_case_is_parameterized():
  from absl.testing import parameterized
  assert issubclass(asu.SparseTestCase, parameterized.TestCase)

  class Case(asu.SparseTestCase):
    @parameterized.parameters((np.float32,), (np.int32,))
    def test_dtype(self, dtype):
      x = asu.rand_bcoo(self.rng())((2, 3), dtype)
      self.assertSparseArraysEquivalent(x, x)
      self.assertEqual(x.dtype, dtype)
  r = _run_cases(Case)
  assert r.testsRun == 2 and not r.errors and not r.failures, r.errors + r.failures


def test_sparse_test_case_seeds_like_jax():
  # (the per-test NumPy generator is seeded as JAX's, from the test's name)
  seen = {}
  for su in (jsu, asu):
    class Case(su.SparseTestCase):
      def test_something(self):
        seen[su] = (self.rng().randn(3), self._random_bdims(1, 2, 3))
    r = _run_cases(Case)
    assert r.testsRun == 1 and not r.errors and not r.failures, r.errors + r.failures
  np.testing.assert_array_equal(seen[asu][0], seen[jsu][0])
  assert seen[asu][1] == seen[jsu][1]
