"""`python -m arrax` and `arrax.install_as_jax()`: `import jax` resolves to arrax in processes that
opt in (checked in subprocesses; the test venv has the real jax installed, which must not leak
in), and only there."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import arrax

ROOT = pathlib.Path(arrax.__file__).parent.parent


def run(args, cwd=None, code=None):
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  cmd = [sys.executable] + args + ([] if code is None else ["-c", textwrap.dedent(code)])
  return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def ok(proc):
  assert proc.returncode == 0, proc.stderr
  return proc.stdout.split("\n")


CHECK_ALIAS = """
import sys
import jax, jax.numpy as jnp
from jax import lax, random
import jax.tree_util
import arrax, arrax.numpy
print(jax is arrax, jnp is arrax.numpy, lax is arrax.lax, random is arrax.random)
print(sys.modules["jax.tree_util"] is arrax.tree_util, arrax.numpy.__spec__.name)
print(any(getattr(m, "__file__", "") and "site-packages/jax/" in m.__file__
          for m in list(sys.modules.values())))
print(int(jnp.sum(jnp.arange(5))), jax.__version__)
"""


def test_script_runs_with_jax_as_arrax(tmp_path):
  script = tmp_path / "prog.py"
  script.write_text(CHECK_ALIAS + "print(__name__, sys.argv, sys.path[0] == %r)\n"
                    % str(tmp_path))
  out = ok(run(["-m", "arrax", str(script), "a", "--b"]))
  assert out[0] == "True True True True"
  assert out[1] == "True arrax.numpy"
  assert out[2] == "False"           # nothing of the installed jax was imported
  assert out[3] == "10 0.10.2"
  assert out[4] == f"__main__ {[str(script), 'a', '--b']} True"


def test_module_runs_with_jax_as_arrax(tmp_path):
  (tmp_path / "mymod.py").write_text(CHECK_ALIAS + "print(__name__, sys.argv[1:])\n")
  out = ok(run(["-m", "arrax", "-m", "mymod", "x", "y"], cwd=tmp_path))
  assert out[0] == "True True True True"
  assert out[2] == "False"
  assert out[4] == "__main__ ['x', 'y']"


def test_dash_c(tmp_path):
  out = ok(run(["-m", "arrax"], code=CHECK_ALIAS))
  assert out[:4] == ["True True True True", "True arrax.numpy", "False", "10 0.10.2"]


def test_exit_status_and_errors_propagate(tmp_path):
  script = tmp_path / "bad.py"
  script.write_text("import sys, jax\nsys.exit(3)\n")
  assert run(["-m", "arrax", str(script)]).returncode == 3
  script.write_text("import jax\nraise KeyError('boom')\n")
  proc = run(["-m", "arrax", str(script)])
  assert proc.returncode == 1 and "KeyError: 'boom'" in proc.stderr


def test_usage_without_arguments():
  proc = run(["-m", "arrax"])
  assert proc.returncode == 2 and "usage: python -m arrax" in proc.stderr


def test_importing_arrax_installs_nothing():
  out = ok(run([], code="""
      import sys
      import arrax, arrax.numpy
      import jax
      print(jax is arrax, "site-packages/jax/" in jax.__file__, arrax._src.jax_alias.is_installed())
  """))
  assert out[0] == "False True False"


def test_install_as_jax_in_process():
  out = ok(run([], code="""
      import sys
      import arrax
      arrax.install_as_jax()
      arrax.install_as_jax()          # a second call is harmless
      import jax.numpy, jax.extend.core, jax.interpreters.ad
      from jax._src import traceback_util, dtypes
      print(jax.numpy is arrax.numpy, jax.extend.core.Primitive is arrax._src.core.Primitive)
      print(dtypes is arrax._src.dtypes, traceback_util.__name__)
      try:
        import jax.no_such_module
      except ModuleNotFoundError as e:
        print("missing", e.name)
      try:
        from jax import no_such_name
      except ImportError as e:
        print("ImportError")
  """))
  assert out[0] == "True True"
  assert out[1] == "True arrax._src.traceback_util"
  assert out[2] == "missing jax.no_such_module"
  assert out[3] == "ImportError"


def test_install_after_real_jax_raises():
  proc = run([], code="""
      import jax, arrax
      arrax.install_as_jax()
  """)
  assert proc.returncode != 0
  assert "RuntimeError: arrax.install_as_jax() must run before jax is imported" in proc.stderr


def test_missing_jax_module_does_not_fall_back_to_real_jax():
  # jax.experimental.jax2tf exists in the installed jax but not in arrax (it needs TensorFlow).
  proc = run(["-m", "arrax"], code="import jax.experimental.jax2tf")
  assert proc.returncode == 1
  assert "No module named 'jax.experimental.jax2tf'" in proc.stderr
  assert "arrax, standing in for jax" in proc.stderr


@pytest.mark.parametrize("stmt,name", [
    ("import jax.core as m", "arrax.core"), ("from jax import typing as m", "arrax.typing"),
    ("import jax.flatten_util as m", "arrax.flatten_util"),
    ("from jax import version as m", "arrax.version"),
    ("import jax.experimental.checkify as m", "arrax.experimental.checkify"),
    ("from jax.interpreters import mlir as m", "arrax.interpreters.mlir")])
def test_submodules_are_arrax_modules(stmt, name):
  out = ok(run(["-m", "arrax"], code=stmt + "\nprint(m.__name__)"))
  assert out[0] == name


def test_log_records_reach_the_jax_logger():
  out = ok(run(["-m", "arrax"], code="""
      import logging, jax
      records = []
      class H(logging.Handler):
        def emit(self, r):
          records.append(r.getMessage())
      logging.getLogger("jax").addHandler(H())
      jax.config.update("jax_log_compiles", True)
      jax.jit(lambda x: x * 3.5)(1.0)
      print(any("compilation" in m for m in records))
  """))
  assert out[0] == "True"
