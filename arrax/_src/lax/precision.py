"""Types that describe how precisely lax computes: dot algorithms (`DotAlgorithm`,
`DotAlgorithmPreset`), the `PrecisionLike` and `DotDimensionNumbers` type aliases, and the
accuracy requests of transcendental functions (`AccuracyMode`, `Tolerance`).

These are JAX's public names with JAX's fields and members. The dot algorithm types live with
dot_general (lax/dot.py), which takes them as its `precision`; the transcendental functions take
`accuracy` (lax/accuracy.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from arrax._src.lax.accuracy import AccuracyMode, Tolerance
from arrax._src.lax.dot import DotAlgorithm, DotAlgorithmPreset, Precision

__all__ = ["AccuracyMode", "DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers",
           "PrecisionLike", "Tolerance"]


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision],
                      DotAlgorithm, DotAlgorithmPreset]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
