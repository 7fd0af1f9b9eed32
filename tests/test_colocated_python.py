"""jax.experimental.colocated_python. JAX 0.10.2 needs cloudpickle (not installed in the oracle
environment) to run a colocated function, so JAX is the oracle for colocated_cpu_devices, the
wrapper class and the errors raised before execution; running functions and objects is
checked against the plain Python results (arrax runs them in this process)."""
import jax
import jax.experimental.colocated_python as jcp
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.experimental.colocated_python as acp
import arrax.numpy as anp
from tests.oracle import assert_same, same_exception

LIBS = ((arrax, acp, anp), (jax, jcp, jnp))


def test_colocated_cpu_devices():
  got = []
  for top, cp, _ in LIBS:
    devs = top.devices()
    mesh = top.sharding.Mesh(np.array(devs).reshape(1), ("x",))
    cmesh = cp.colocated_cpu_devices(mesh)
    got.append((str(cp.colocated_cpu_devices(devs)), str(cp.colocated_cpu_devices(tuple(devs))),
                type(cp.colocated_cpu_devices(devs)).__name__, str(cmesh),
                [d.id for d in cmesh.devices.flat]))
  assert got[0] == got[1]


def test_errors_before_execution():
  cases = {
      "no input": lambda top, cp, np_: cp.colocated_python(lambda: 1)(),
      "devices twice": lambda top, cp, np_: cp.colocated_python(lambda x: x).specialize(
          devices=top.devices()).specialize(devices=top.devices()),
      "in_specs twice": lambda top, cp, np_: cp.colocated_python(lambda x: x).specialize(
          in_specs=((top.ShapeDtypeStruct((2,), np.float32),), {})).specialize(
              in_specs=((), {})),
      "out_specs_fn twice": lambda top, cp, np_: cp.colocated_python(lambda x: x).specialize(
          out_specs_fn=lambda x: x).specialize(out_specs_fn=lambda x: x),
  }
  for name, case in cases.items():
    j = pytest.raises(ValueError, case, *LIBS[1])
    same_exception(lambda: case(*LIBS[0]), j.value, match=(str(j.value),))


def test_wrapped_class_shape():
  made = []
  for top, cp, _ in LIBS:
    @cp.colocated_python_class
    class Counter:
      """A counter."""

      def __init__(self, start):
        self.n = start

      def add(self, x):
        return x + self.n

    c = Counter(1)
    made.append((Counter.__name__, Counter.__doc__, type(c).__name__, callable(c.add),
                 callable(c.add.specialize)))
  assert made[0] == made[1]


def test_functions_run_in_process():
  cpu = acp.colocated_cpu_devices(arrax.devices())
  x = arrax.device_put(anp.arange(4.0), cpu[0])

  @acp.colocated_python
  def f(a, b, *, scale):
    return {"s": (a + b["c"]) * scale, "n": b["c"].sum()}

  out = f(x, {"c": x * 2}, scale=anp.float32(3))
  assert_same(out["s"], jnp.arange(4.0) * 9)
  assert_same(out["n"], jnp.float32(12))
  assert f.__name__ == "f"

  g = acp.colocated_python(lambda: anp.ones(2)).specialize(devices=cpu)
  assert_same(g(), jnp.ones(2))

  spec = arrax.ShapeDtypeStruct((4,), np.float32)
  h = acp.colocated_python(lambda a: a * 2).specialize(
      in_specs=((spec,), {}), out_specs_fn=lambda a: a)
  assert_same(h(x), jnp.arange(4.0) * 2)
  with pytest.raises(ValueError, match="do not match"):
    h(anp.ones(3))
  bad_out = acp.colocated_python(lambda a: a[:2]).specialize(out_specs_fn=lambda a: a)
  with pytest.raises(ValueError, match="do not match"):
    bad_out(x)
  with pytest.raises(ValueError, match="only supports jax.Array"):
    acp.colocated_python(lambda a: a)(1.0)
  with pytest.raises(ValueError, match="only supports jax.Array"):
    acp.colocated_python(lambda a: 1.0)(x)


def test_objects_created_on_first_call():
  created = []

  @acp.colocated_python_class
  class Acc:
    def __init__(self, start):
      created.append(start)
      self.total = start

    def add(self, x):
      self.total = self.total + x
      return self.total

  acc = Acc(anp.zeros(2))
  assert created == []
  acc.add(anp.ones(2))
  assert_same(acc.add(anp.ones(2)), jnp.full(2, 2.0, jnp.float32))
  assert len(created) == 1
  with pytest.raises(ValueError, match="No devices found"):
    acp.colocated_python_class(type("K", (), {"get": lambda self: 1}))().get()
