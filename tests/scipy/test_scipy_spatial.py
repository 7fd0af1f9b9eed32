"""arrax.scipy.spatial.transform (Rotation, Slerp) against JAX 0.10.2: every constructor and
conversion (single and stacked rotations, degrees, Euler sequences, scalar-first and canonical
quaternions), composition, apply, mean, Slerp; pytrees under jit and vmap; grads; errors."""
import jax
import numpy as np
import pytest
from jax.scipy.spatial.transform import Rotation as JR
from jax.scipy.spatial.transform import Slerp as JS

import arrax
from arrax.scipy.spatial.transform import Rotation as AR
from arrax.scipy.spatial.transform import Slerp as AS
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same

Q = np.random.RandomState(0).randn(5, 4).astype(np.float32)
ANGLES = np.float32([[0.1, 0.5, -1.], [2., 0.3, 0.2], [0., np.pi / 2, 0.3]])


def same(a, j, tol=(1e-4, 1e-5)):
  if isinstance(j, (JR, JS)):
    assert type(a).__name__ == type(j).__name__
    a, j = tuple(a), tuple(j)
    if isinstance(j[-2] if len(j) > 2 else None, JR):
      a, j = a[:2] + (a[2].quat,) + a[3:], j[:2] + (j[2].quat,) + j[3:]
  assert_same(a, j, tol=tol)


@pytest.mark.parametrize("seq", ["xyz", "ZXZ", "xy", "Y", "XYZ", "zyx"])
@pytest.mark.parametrize("degrees", [False, True])
def test_from_euler(seq, degrees):
  angles = ANGLES[:, :len(seq)] * (30 if degrees else 1)
  same(AR.from_euler(seq, angles, degrees), JR.from_euler(seq, angles, degrees))
  same(AR.from_euler(seq, angles[0], degrees), JR.from_euler(seq, angles[0], degrees))


@pytest.mark.parametrize("quat", [Q, Q[0]])
def test_conversions(quat):
  a, j = AR.from_quat(quat), JR.from_quat(quat)
  same(a, j)
  same(a.as_matrix(), j.as_matrix())
  same(AR.from_matrix(np.asarray(j.as_matrix())), JR.from_matrix(j.as_matrix()))
  for deg in (False, True):
    same(a.as_rotvec(deg), j.as_rotvec(deg))
    same(AR.from_rotvec(np.asarray(j.as_rotvec(deg)), deg), JR.from_rotvec(j.as_rotvec(deg), deg))
  same(a.as_mrp(), j.as_mrp())
  same(AR.from_mrp(np.asarray(j.as_mrp())), JR.from_mrp(j.as_mrp()))
  for seq in ("xyz", "ZYX", "zxz", "XYX", "yzx"):
    same(a.as_euler(seq), j.as_euler(seq))
    same(a.as_euler(seq, degrees=True), j.as_euler(seq, degrees=True), tol=(1e-4, 1e-3))
  for canonical in (False, True):
    for first in (False, True):
      same(a.as_quat(canonical, first), j.as_quat(canonical, first))
  same(a.inv(), j.inv())
  same(a.magnitude(), j.magnitude())
  v = np.float32([1., -2., 3.])
  same(a.apply(v), j.apply(v))
  same(a.apply(v, inverse=True), j.apply(v, inverse=True))
  same(a * a.inv(), j * j.inv())


def test_small_angles_and_special_matrices():
  tiny = np.float32([[1e-5, 0., 0.], [0., 2e-4, 1e-4], [0., 0., 0.]])
  same(AR.from_rotvec(tiny), JR.from_rotvec(tiny))
  same(AR.from_rotvec(tiny).as_rotvec(), JR.from_rotvec(tiny).as_rotvec())
  mats = np.stack([np.eye(3), np.diag([1., -1., -1.]), np.diag([-1., 1., -1.]),
                   np.diag([-1., -1., 1.])]).astype(np.float32)
  same(AR.from_matrix(mats), JR.from_matrix(mats))
  gimbal = np.float32([[0.3, np.pi / 2, 0.1], [0.3, 0., 0.1]])
  same(AR.from_euler("xyz", gimbal).as_euler("xyz"), JR.from_euler("xyz", gimbal).as_euler("xyz"))


def test_stacks_mean_identity():
  a, j = AR.from_quat(Q), JR.from_quat(Q)
  same(a[1:3], j[1:3])
  assert len(a) == len(j) == 5
  same(AR.concatenate([a, a[:2]]), JR.concatenate([j, j[:2]]))
  same(a * a[::-1], j * j[::-1])
  same(a.mean(), j.mean())
  same(a.mean(np.float32([1., 2., 0.5, 1., 3.])), j.mean(np.float32([1., 2., 0.5, 1., 3.])))
  same(AR.identity(), JR.identity())
  same(AR.identity(dtype=np.float32), JR.identity(dtype=np.float32))
  assert a.single is False and a[0].single is True


def test_slerp():
  times = np.float32([0., 1., 2.5, 3., 4.])
  a, j = AS.init(times, AR.from_quat(Q)), JS.init(times, JR.from_quat(Q))
  same(a.times, j.times)
  same(a.rotvecs, j.rotvecs)
  same(a.rotations, j.rotations)
  for t in (np.float32([0., 0.5, 2., 3.9, 4.]), 1.2, 0.):
    same(a(t), j(t))


def test_jit_vmap_grad():
  a = AR.from_quat(Q)
  got = arrax.jit(lambda r, v: r.apply(v))(a, np.float32([1., 2., 3.]))
  want = jax.jit(lambda r, v: r.apply(v))(JR.from_quat(Q), np.float32([1., 2., 3.]))
  same(got, want)
  got = arrax.vmap(lambda q: AR.from_quat(q).as_euler("xyz"))(Q)
  want = jax.vmap(lambda q: JR.from_quat(q).as_euler("xyz"))(Q)
  same(got, want)
  s = AS.init(np.float32([0., 1., 2.]), AR.from_quat(Q[:3]))
  same(arrax.jit(lambda s, t: s(t).as_quat())(s, np.float32([0.3, 1.5])),
       jax.jit(lambda s, t: s(t).as_quat())(JS.init(np.float32([0., 1., 2.]), JR.from_quat(Q[:3])),
                                            np.float32([0.3, 1.5])))
  check_grads(lambda q: AR.from_quat(q).as_matrix(), (Q[0],), order=1, modes=("fwd", "rev"),
              atol=5e-2, rtol=5e-2)
  check_grads(lambda v: AR.from_rotvec(v).as_quat(), (np.float32([0.3, -0.2, 0.5]),), order=1,
              modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("call", [
    lambda R, S: R.from_euler("xyzx", np.zeros(4)), lambda R, S: R.from_euler("xYz", np.zeros(3)),
    lambda R, S: R.from_euler("xxy", np.zeros(3)), lambda R, S: R.from_euler("", np.zeros(0)),
    lambda R, S: R.from_quat(Q).as_euler("xy"), lambda R, S: R.from_quat(Q).as_euler("xxz"),
    lambda R, S: R.from_quat(Q[0])[0], lambda R, S: len(R.from_quat(Q[0])),
    lambda R, S: R.from_quat(Q).mean(np.ones((2, 5))), lambda R, S: R.from_quat(Q).mean(np.ones(3)),
    lambda R, S: R.random(None), lambda R, S: S.init(np.zeros(5), Q),
    lambda R, S: S.init(np.zeros(1), R.from_quat(Q[:1])),
    lambda R, S: S.init(np.zeros((5, 1)), R.from_quat(Q)),
    lambda R, S: S.init(np.arange(4.), R.from_quat(Q)),
    lambda R, S: S.init(np.arange(5.), R.from_quat(Q))(np.zeros((2, 2))),
])
def test_errors(call):
  assert_raises_like(lambda: call(JR, JS), lambda: call(AR, AS))
