"""Accuracy requests of transcendental functions (`lax.exp(x, accuracy=...)`): `Tolerance`,
`AccuracyMode`, and their StableHLO `result_accuracy` attribute."""
from __future__ import annotations

import enum

from jaxlib.mlir.dialects import stablehlo as hlo


class Tolerance:
  """Tolerances a transcendental function's implementation must meet: at most two of atol,
  rtol and ulps (all nonnegative, not all zero)."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol = atol
    self.rtol = rtol
    self.ulps = ulps


class AccuracyMode(enum.Enum):
  """Which implementation of a transcendental function to prefer."""
  HIGHEST = 1
  DEFAULT = 2


def check_accuracy(fun_name, accuracy):
  """`accuracy` if it is None, a Tolerance or an AccuracyMode (otherwise NotImplementedError,
  JAX's class for it)."""
  if accuracy is None or isinstance(accuracy, (Tolerance, AccuracyMode)):
    return accuracy
  raise NotImplementedError(f"Accuracy {accuracy!r} not supported by lax.{fun_name}: pass "
                            "None, a lax.Tolerance or a lax.AccuracyMode.")


def accuracy_attr(accuracy):
  """The StableHLO result_accuracy attribute of an accuracy request (None for none)."""
  if accuracy is None:
    return None
  if isinstance(accuracy, AccuracyMode):
    return hlo.ResultAccuracyAttr.get(0.0, 0.0, 0, accuracy.name)
  return hlo.ResultAccuracyAttr.get(atol=accuracy.atol, rtol=accuracy.rtol,
                                    ulps=accuracy.ulps, mode="TOLERANCE")
