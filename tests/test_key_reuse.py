"""Key-reuse checking (jax_debug_key_reuse / debug_key_reuse) against JAX 0.10.2: which uses
of a typed key consume it (sampling, split, static slicing) and which do not (fold_in,
key_data, clone, iteration, raw keys), through jit and vmap, the KeyReuseError messages
eagerly and while tracing, and the experimental.key_reuse module."""
import jax
import jax.numpy as jnp

import arrax
import arrax.numpy as anp

SAMPLERS = {
    "normal": lambda r, np_, k: r.normal(k),
    "bits": lambda r, np_, k: r.bits(k),
    "split": lambda r, np_, k: r.split(k),
    "fold_in": lambda r, np_, k: r.fold_in(k, 1),
    "key_data": lambda r, np_, k: r.key_data(k),
    "clone": lambda r, np_, k: r.clone(k),
}


def _then_split(f):
  def case(top, r, np_):
    k = r.key(0)
    f(r, np_, k)
    r.split(k)
  return case


def _slices(top, r, np_):
  ks = r.split(r.key(0), 4)
  ks[:2]
  ks[2:]
  ks[-3]


def _split_pair(top, r, np_):
  k1, k2 = r.split(r.key(0))
  r.normal(k1)
  r.normal(k2)
  r.normal(k1)


def _iteration(top, r, np_):
  ks = r.split(r.key(0))
  a, _ = ks
  _, _ = ks
  r.normal(a)
  r.normal(ks[0])


def _reshape_forwards(top, r, np_):
  ks = r.split(r.key(0), 4)
  r.normal(ks.reshape(2, 2)[0, 1])
  r.normal(ks[1])


def _copy_forwards(top, r, np_):
  k = r.key(0)
  r.normal(k)
  r.normal(k.copy())


def _raw_keys(top, r, np_):
  k = r.PRNGKey(0)
  r.normal(k)
  r.normal(k)


def _rewrapped(top, r, np_):
  k = r.key(0)
  r.normal(k)
  r.normal(r.wrap_key_data(r.key_data(k)))


def _jit_twice(top, r, np_):
  k = r.key(0)
  f = top.jit(r.normal)
  f(k)
  f(k)


def _jit_identity(top, r, np_):
  k = r.key(0)
  top.jit(lambda k: k)(k)
  top.jit(lambda k, x: x * 2)(k, 1.0)
  r.normal(k)


def _vmap_consumes(top, r, np_):
  ks = r.split(r.key(0))
  top.vmap(r.normal)(ks)
  r.normal(ks[1])


def _consumed_before_vmap(top, r, np_):
  ks = r.split(r.key(0))
  r.split(ks[0])
  top.vmap(r.normal)(ks)


def _scan_then_use(top, r, np_):
  def body(k, _):
    k, sub = r.split(k)
    return k, r.normal(sub)
  k = r.key(0)
  top.lax.scan(body, k, None, length=2)
  r.normal(k)   # the scan used k up


def _traced(f):
  return lambda top, r, np_: top.make_jaxpr(f(r))(r.split(r.key(0)))


CASES = {
    **{f"{n} then split": _then_split(f) for n, f in SAMPLERS.items()},
    "slices": _slices, "split pair": _split_pair, "iteration": _iteration,
    "reshape forwards": _reshape_forwards, "copy forwards": _copy_forwards,
    "raw keys": _raw_keys, "rewrapped": _rewrapped,
    "traced split twice": _traced(lambda r: lambda ks: (r.split(ks[0]), r.split(ks[0]))),
    "traced slice twice": _traced(lambda r: lambda ks: (ks[1], ks[1])),
    "traced normal twice": _traced(lambda r: lambda ks: (r.normal(ks[0]), r.normal(ks[0]))),
    "traced fold_in": _traced(lambda r: lambda ks: (r.normal(ks[0]), r.fold_in(ks[0], 1))),
    "jit normal twice": lambda top, r, np_: top.jit(
        lambda k: (r.normal(k), r.normal(k)))(r.key(0)),
    "jit consumes, called twice": _jit_twice,
    "jit passes through": _jit_identity,
    "vmap consumes": _vmap_consumes,
    "consumed before vmap": _consumed_before_vmap,
    "scan carries a key": _scan_then_use,
    "while carries a key": lambda top, r, np_: top.lax.while_loop(
        lambda c: c[0] < 2, lambda c: (c[0] + 1, r.split(c[1])[0]), (0, r.key(0))),
}


def outcome(top, np_, case, flag=True):
  with top.debug_key_reuse(flag):
    try:
      case(top, top.random, np_)
    except Exception as e:  # noqa: BLE001
      return type(e).__name__, str(e).splitlines()[0]
  return "ok"


def test_consumption_and_messages():
  diffs = []
  for name, case in CASES.items():
    a, j = outcome(arrax, anp, case), outcome(jax, jnp, case)
    if a != j:
      diffs.append(f"{name}: arrax {a} jax {j}")
  assert not diffs, "\n".join(diffs)
  assert outcome(arrax, anp, CASES["split pair"]) == (
      "KeyReuseError", "Previously-consumed key passed to jit-compiled function at index 0")
  # Off by default (and when switched off).
  assert outcome(arrax, anp, CASES["split pair"], flag=False) == "ok"
  assert not arrax.config.jax_debug_key_reuse
  assert issubclass(arrax.errors.KeyReuseError, arrax.errors.JAXTypeError)
  import arrax.experimental.key_reuse as akr
  import jax.experimental.key_reuse as jkr
  assert ({n for n in dir(akr) if not n.startswith("_")}
          == {n for n in dir(jkr) if not n.startswith("_")} == set())
