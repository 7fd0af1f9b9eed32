"""arrax works with jax absent, and side by side with jax in one process."""
import subprocess
import sys
import textwrap

import numpy as np

PROGRAM = textwrap.dedent("""
    import sys
    class _BlockJax:
        def find_spec(self, name, path=None, target=None):
            if name == "jax" or name.startswith("jax."):
                raise ImportError("jax is blocked in this test")
    sys.meta_path.insert(0, _BlockJax())
    import arrax as jax
    import arrax.numpy as jnp
    @jax.jit
    def f(a, b):
        return (-b + jnp.sqrt(b**2 - 4*a)) / (2*a)
    print(float(f(1.0, 4.0)))
    print(jax.make_jaxpr(lambda x: 2 + jnp.sin(x))(jnp.array(1.0)))
    print((jnp.arange(4) * 2).sum())
    print(float(jax.jit(jax.grad(lambda x: x**4 + 2**x))(1.0)))
    print(jax.vmap(jax.grad(lambda x: 2 + jnp.sin(x)))(jnp.array([0.0, 0.0])).tolist())
    print(jax.random.normal(jax.random.key(42)).dtype)
    print(int(jax.lax.fori_loop(0, 5, lambda i, c: c + i, 0)))
    print(float(jax.lax.cond(True, jnp.sin, jnp.cos, 0.0)))
    import arrax.random, arrax.lax, arrax.test_util, arrax.custom_derivatives, arrax.ad_checkpoint
    import arrax.extend.mlir.ir, arrax.extend.mlir.passmanager, arrax.extend.lowering
    import arrax.extend.sharding, arrax.extend.xla, arrax.extend.pallas, arrax.extend.ifrt_programs
    import arrax.interpreters.pxla, arrax.interpreters.xla, arrax.tools
    import arrax.experimental.sparse.bcoo, arrax.experimental.colocated_python.obj_backend
    from arrax.extend.mlir.dialects import (arith, builtin, chlo, func, math, memref, mpmd, scf,
                                            sdy, sparse_tensor, stablehlo, vector)
    p = arrax.extend.core.Primitive("neg_twice")
    p.def_abstract_eval(lambda x: x)
    arrax.interpreters.mlir.register_lowering(
        p, lambda ctx, x: [stablehlo.negate(chlo.square(x))])
    print(float(jax.jit(p.bind)(3.0)))
    assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax was imported"
""")


def test_runs_with_jax_unimportable():
  out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  assert abs(float(lines[0]) - (-4 + np.sqrt(12)) / 2) < 1e-6
  assert lines[1] == "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = add 2.0:f32[] b in (c,) }"
  assert lines[2] == "12"
  assert abs(float(lines[3]) - (4 + 2 * np.log(2))) < 1e-5
  assert lines[4] == "[1.0, 1.0]"
  assert lines[5] == "float32"
  assert lines[6] == "10"
  assert lines[7] == "0.0"
  assert lines[8] == "-9.0"


COEXIST = textwrap.dedent("""
    import sys
    order = sys.argv[1]
    if order == "jax_first":
        import jax, jax.numpy as jnp
        import arrax, arrax.numpy as anp
    else:
        import arrax, arrax.numpy as anp
        import jax, jax.numpy as jnp
    for _ in range(2):
        a = arrax.jit(lambda x: anp.sin(x) * 2)(anp.arange(3.0))
        j = jax.jit(lambda x: jnp.sin(x) * 2)(jnp.arange(3.0))
        assert type(a).__module__.startswith("arrax"), type(a)
        assert abs(float(a.sum()) - float(j.sum())) < 1e-6
        assert repr(jnp.array([1, 2])) == repr(anp.array([1, 2]))
        jax.config.update("jax_enable_x64", True)
        assert jnp.zeros(2, jnp.float64).dtype == "float64"
        assert anp.zeros(2).dtype == "float32"   # arrax's own config is untouched
        jax.config.update("jax_enable_x64", False)
    print("ok")
""")


def test_coexists_with_jax_in_either_import_order():
  for order in ("jax_first", "arrax_first"):
    out = subprocess.run([sys.executable, "-c", COEXIST, order], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", (order, out.stderr)


MULTI = textwrap.dedent("""
    import arrax, arrax.numpy as jnp
    assert arrax.device_count() == 4, arrax.devices()
    d = arrax.devices()[2]
    x = arrax.device_put(jnp.arange(4.0), d)
    assert x.device == d and x.committed
    y = arrax.jit(lambda a: a * 2)(x)
    z = jnp.sin(y) + 1
    assert y.device == d and z.device == d and z.committed
    assert jnp.ones(2).device == arrax.devices()[0]
    print(float((z - 1).sum()))
""")


def test_simulated_cpu_devices_and_placement():
  import os
  env = dict(os.environ, JAX_NUM_CPU_DEVICES="4")
  out = subprocess.run([sys.executable, "-c", MULTI], capture_output=True, text=True,
                       timeout=300, env=env)
  assert out.returncode == 0, out.stderr
  assert abs(float(out.stdout) - float(np.sin(np.arange(4.0) * 2).sum())) < 1e-5


def test_missing_gpu_plugin_gives_clear_error():
  import pytest

  from arrax._src import backend
  with pytest.raises(RuntimeError, match="CUDA PJRT plugin is not installed"):
    backend.get_client("gpu")
  with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
    backend.get_client("tpu")
