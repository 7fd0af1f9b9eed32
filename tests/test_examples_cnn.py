"""examples/cnn.py trains the same CNN on arrax and on JAX: the loss trajectories agree and fall."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "cnn.py"
STEPS = 12


def _load_example():
  spec = importlib.util.spec_from_file_location("cnn_example", EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.fixture(scope="module")
def cnn():
  return _load_example()


@pytest.fixture(scope="module")
def trajectories(cnn):
  logs = {"arrax": [], "jax": []}
  losses = {b: cnn.train(b, num_steps=STEPS, print_every=4, log=logs[b].append)
            for b in ("arrax", "jax")}
  return losses, logs


def test_loss_trajectories_agree(trajectories):
  losses, _ = trajectories
  assert len(losses["arrax"]) == len(losses["jax"]) == STEPS
  np.testing.assert_allclose(losses["arrax"], losses["jax"], rtol=1e-4)


def test_loss_decreases(trajectories):
  losses, _ = trajectories
  for backend, ls in losses.items():
    assert all(np.isfinite(ls)), backend
    assert ls[-1] < 0.8 * ls[0], (backend, ls)
    # the last steps are below the first steps on average (not just one lucky batch)
    assert np.mean(ls[-4:]) < np.mean(ls[:4]), (backend, ls)


def test_printed_log_matches(trajectories):
  _, logs = trajectories
  steps = [line.split()[1] for line in logs["arrax"] if line.startswith("step")]
  assert steps == ["0", "4", "8", "11"]
  assert logs["arrax"][-1].startswith("training accuracy")
  assert len(logs["arrax"]) == len(logs["jax"])


def test_backend_choice(cnn, monkeypatch):
  import jax

  import arrax
  assert cnn.load_backend("arrax")[0] is arrax
  assert cnn.load_backend("jax")[0] is jax
  with pytest.raises(ValueError, match="backend"):
    cnn.load_backend("torch")
