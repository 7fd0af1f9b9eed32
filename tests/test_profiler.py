"""jax.profiler, against JAX 0.10.2: signatures, traces written to a TensorBoard/Perfetto
directory holding the annotations, device memory profiles, and JAX's errors."""
import gzip
import inspect
import json
import pathlib

import jax
import jax.profiler
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax import profiler as aprof

jprof = jax.profiler

NAMES = sorted(n for n in dir(jprof) if not n.startswith("_"))


def test_same_public_names():
  assert sorted(n for n in dir(aprof) if not n.startswith("_")) == NAMES
  assert arrax.profiler is aprof


@pytest.mark.parametrize("name", [n for n in NAMES if inspect.isfunction(getattr(jprof, n))])
def test_signatures(name):
  ours, theirs = inspect.signature(getattr(aprof, name)), inspect.signature(getattr(jprof, name))
  assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
         [(p.name, p.kind, p.default) for p in theirs.parameters.values()]


def _files(log_dir):
  runs = list((pathlib.Path(log_dir) / "plugins" / "profile").iterdir())
  assert len(runs) == 1
  return {p.name.split(".", 1)[1]: p for p in runs[0].iterdir()}


def _trace_events(path):
  with gzip.open(path, "rb") as f:
    return json.load(f)["traceEvents"]


def _event_names(log_dir):
  files = _files(log_dir)
  return {e.get("name") for e in _trace_events(files["trace.json.gz"])}, files


def test_trace_context_manager_writes_annotations(tmp_path):
  x = anp.arange(16.0)
  f = arrax.jit(lambda x: anp.sin(x) * 2)
  with aprof.trace(tmp_path):
    with aprof.TraceAnnotation("arrax_annotation_1", size=16):
      y = f(x).block_until_ready()
    with aprof.StepTraceAnnotation("train", step_num=3):
      y = (y + 1).block_until_ready()
  np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(16.0)) * 2 + 1, rtol=1e-6)
  names, files = _event_names(tmp_path)
  assert {"xplane.pb", "trace.json.gz"} <= set(files)
  assert "arrax_annotation_1" in names
  assert b"arrax_annotation_1" in files["xplane.pb"].read_bytes()
  assert any(n and n.startswith("train") for n in names)
  # The xplane is readable with jaxlib's ProfileData as JAX's is.
  data = aprof.ProfileData.from_file(str(files["xplane.pb"]))
  events = [e.name for p in data.planes for line in p.lines for e in line.events]
  assert "arrax_annotation_1" in events


def test_start_stop_and_annotate_function(tmp_path):
  @aprof.annotate_function
  def my_step(x):
    return (x * 3).block_until_ready()

  named = aprof.annotate_function(lambda x: x - 1, name="renamed_step")
  assert my_step.__name__ == "my_step"
  aprof.start_trace(str(tmp_path), create_perfetto_trace=True,
                    profiler_options=aprof.ProfileOptions())
  try:
    out = named(my_step(anp.ones(3)))
  finally:
    aprof.stop_trace()
  assert np.asarray(out).tolist() == [2.0, 2.0, 2.0]
  names, files = _event_names(tmp_path)
  assert {"test_start_stop_and_annotate_function.<locals>.my_step", "renamed_step"} <= names
  # Perfetto's copy has no `metadata` field.
  perfetto = next(p for p in files.values() if p.name == "perfetto_trace.json.gz")
  with gzip.open(perfetto) as f:
    assert "metadata" not in json.load(f)


def test_trace_stops_on_error(tmp_path):
  with pytest.raises(ZeroDivisionError):
    with aprof.trace(tmp_path / "a"):
      1 / 0
  with aprof.trace(tmp_path / "b"):   # the failed trace was stopped
    pass
  assert _files(tmp_path / "b")


def _error(prof, fn):
  try:
    fn(prof)
  except Exception as e:   # noqa: BLE001
    return type(e).__name__, str(e)
  return None


@pytest.mark.parametrize("case", ["stop_without_start", "double_start", "stop_server"])
def test_errors_like_jax(case, tmp_path):
  def run(prof, d):
    if case == "stop_without_start":
      prof.stop_trace()
    elif case == "double_start":
      prof.start_trace(d)
      try:
        prof.start_trace(d)
      finally:
        prof.stop_trace()
    else:
      prof.stop_server()
  theirs = _error(jprof, lambda p: run(p, str(tmp_path / "j")))
  ours = _error(aprof, lambda p: run(p, str(tmp_path / "a")))
  assert theirs is not None and ours == theirs


def test_device_memory_profile(tmp_path):
  keep = anp.ones((256, 256))
  data = aprof.device_memory_profile()
  assert isinstance(data, bytes) and data[:2] == b"\x1f\x8b"   # gzipped like JAX's
  assert len(gzip.decompress(data)) > 0
  assert type(jprof.device_memory_profile()) is type(data)
  path = tmp_path / "mem.prof"
  aprof.save_device_memory_profile(str(path))
  assert path.read_bytes()[:2] == b"\x1f\x8b"
  del keep


def test_server_start_stop():
  server = aprof.start_server(0)
  try:
    assert isinstance(server, type(server))
    with pytest.raises(ValueError, match="Only one profiler server"):
      aprof.start_server(0)
  finally:
    aprof.stop_server()
  with pytest.raises(ValueError, match="No active profiler server"):
    aprof.stop_server()


def test_classes_are_jaxlibs():
  assert aprof.ProfileData is jprof.ProfileData
  assert aprof.ProfileEvent is jprof.ProfileEvent and aprof.ProfilePlane is jprof.ProfilePlane
  opts = aprof.ProfileOptions()
  opts.host_tracer_level = 2
  assert opts.host_tracer_level == 2
  assert jprof.TraceAnnotation.__mro__[1] in aprof.TraceAnnotation.__mro__
  assert issubclass(aprof.StepTraceAnnotation, aprof.TraceAnnotation)
