"""The package's structure: layers that import only downward, every primitive's rules declared
on it, public modules that export only JAX's public names."""
import ast
import importlib
import importlib.util
import pathlib
import sys

import pytest

import arrax
from arrax._src import core

PKG = pathlib.Path(arrax.__file__).parent
COVERAGE_FILE = pathlib.Path(__file__).with_name("rule_coverage.txt")


# ---- imports ---------------------------------------------------------------------------------
def _modules():
  mods = {}
  for path in PKG.rglob("*.py"):
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
      parts.pop()
    mods[".".join(parts)] = path
  return mods


def _import_edges(mods):
  """module -> {imported arrax module: (line, inside a function?)}, counting every import."""
  edges = {m: {} for m in mods}
  for mod, path in mods.items():
    tree = ast.parse(path.read_text())
    in_function = set()
    for node in ast.walk(tree):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        in_function.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
      targets = []
      if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          pkg = mod.split(".")
          if not path.name == "__init__.py":
            pkg = pkg[:-1]
          pkg = pkg[:len(pkg) - node.level + 1]
          base = ".".join(pkg + ([base] if base else []))
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                   for a in node.names]
      for t in targets:
        while t and t not in mods:
          t = t.rpartition(".")[0]
        if t and t != mod:
          edges[mod].setdefault(t, (node.lineno, id(node) in in_function))
  return edges


def _cycles(edges):
  """Strongly connected components of more than one module (Tarjan)."""
  index, low, stack, on_stack, out = {}, {}, [], set(), []
  counter = [0]
  sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

  def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    for w in edges[v]:
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      comp = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        comp.append(w)
        if w == v:
          break
      if len(comp) > 1:
        out.append(sorted(comp))

  for v in edges:
    if v not in index:
      visit(v)
  return out


def test_no_import_cycle():
  edges = _import_edges(_modules())
  cycles = _cycles(edges)
  report = []
  for comp in cycles:
    members = set(comp)
    report.append(f"{len(comp)} modules in a cycle:")
    for m in comp:
      report.append(f"  {m} -> " + ", ".join(
          f"{t} (line {line}{', in a function' if fn else ''})"
          for t, (line, fn) in sorted(edges[m].items()) if t in members))
  assert not cycles, "\n".join(report)


def test_no_function_level_imports_of_arrax():
  # Imports written inside functions hid the circle this package had; every arrax import is
  # at module level now, so the import graph above is the whole truth.
  edges = _import_edges(_modules())
  inside = [f"{m} imports {t} at line {line}" for m, ts in edges.items()
            for t, (line, fn) in ts.items() if fn]
  assert not inside, "\n".join(inside)


def test_module_attributes_exist():
  # `module.name` references to imported arrax modules resolve, so a function moved between
  # modules cannot leave a caller behind that only fails when its line runs.
  missing = []
  for path in sorted(PKG.rglob("*.py")):
    tree = ast.parse(path.read_text())
    aliases = {}
    for node in tree.body:
      if isinstance(node, ast.ImportFrom) and node.level == 0 and \
          (node.module or "").startswith("arrax"):
        for a in node.names:
          full = f"{node.module}.{a.name}"
          if _is_module(full):
            aliases[a.asname or a.name] = importlib.import_module(full)
      elif isinstance(node, ast.Import):
        for a in node.names:
          if a.name.startswith("arrax") and a.asname:
            aliases[a.asname] = importlib.import_module(a.name)
    for node in ast.walk(tree):
      if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
          and node.value.id in aliases and not hasattr(aliases[node.value.id], node.attr):
        missing.append(f"{path.relative_to(PKG)}:{node.lineno}: {node.value.id}.{node.attr}")
  assert not missing, "\n".join(missing)


def _is_module(name):
  try:
    return importlib.util.find_spec(name) is not None
  except ModuleNotFoundError:
    return False


def test_core_knows_no_primitive_family():
  edges = _import_edges(_modules())
  below_lax = ["arrax._src.core", "arrax._src.ad", "arrax._src.batching", "arrax._src.tracing",
               "arrax._src.dispatch", "arrax._src.array", "arrax._src.mlir", "arrax._src.jit"]
  for m in below_lax:
    up = [t for t in edges[m] if t.startswith(("arrax._src.lax", "arrax._src.numpy"))]
    assert not up, f"{m} imports {up}"


# ---- rules -----------------------------------------------------------------------------------
def all_primitives():
  # (every public module first: some, such as experimental.pallas and .sparse, are imported
  # only when used, as in JAX, and their primitives exist from then on)
  for m in PUBLIC:
    importlib.import_module("arrax" + m)
  prims = {}
  for name, mod in sorted(sys.modules.items()):
    if name.startswith("arrax"):
      for v in vars(mod).values():
        if isinstance(v, core.Primitive):
          prims.setdefault(v.name, v)
  return prims


def coverage_table():
  lines = []
  for name, prim in sorted(all_primitives().items()):
    slots = [s for s in core.RULE_SLOTS if prim.has_rule(s)]
    lines.append(f"{name}: {' '.join(slots)}")
  return lines


def test_rule_coverage_is_reviewed():
  """Every primitive and the rule slots it fills, compared with tests/rule_coverage.txt: a
  primitive added without a rule (or a rule lost) shows up here, in review, not for a user.
  After checking a change, regenerate the file with
  `python -c "import tests.test_structure as t; t.write_coverage()"`."""
  want = COVERAGE_FILE.read_text().splitlines()
  got = coverage_table()
  missing = sorted(set(want) - set(got))
  extra = sorted(set(got) - set(want))
  assert not (missing or extra), ("rule coverage changed; review and update "
                                  f"{COVERAGE_FILE.name}:\n- " + "\n- ".join(missing)
                                  + "\n+ " + "\n+ ".join(extra))


def write_coverage():
  COVERAGE_FILE.write_text("\n".join(coverage_table()) + "\n")


def test_every_primitive_has_shape_rule_and_lowering():
  for name, prim in all_primitives().items():
    if getattr(prim, "runs_inline", False):   # (its bind runs other primitives: no equations)
      continue
    assert prim.has_rule("abstract_eval"), name
    assert prim.has_rule("lowering"), name
    assert prim.has_rule("batch") or prim.has_rule("batch_axis"), name


@pytest.mark.parametrize("slot,what", [
    ("jvp", "Differentiation rule"), ("transpose", "Transpose rule"),
    ("batch", "Batching rule"), ("lowering", "Lowering to StableHLO"),
    ("abstract_eval", "Abstract evaluation")])
def test_missing_rule_names_primitive_and_rule(slot, what):
  prim = core.Primitive("made_up_op")
  assert not prim.has_rule(slot)
  with pytest.raises(NotImplementedError, match=f"{what}.* for 'made_up_op' not implemented"):
    getattr(prim, slot)()


def test_missing_jvp_raises_through_grad():
  import jax

  import arrax.lax as alax
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'nextafter'"):
    arrax.grad(lambda x: alax.nextafter(x, 2.0))(1.0)
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'nextafter'"):
    jax.grad(lambda x: jax.lax.nextafter(x, 2.0))(1.0)


def test_rules_registered_with_def_methods_only():
  # One registration style: `prim.def_<slot>(fn)` or a transformation's builder, never an
  # assignment to a slot.
  slots = "|".join(core.RULE_SLOTS) + "|impl|batch_collective"
  import re
  pattern = re.compile(rf"^\s*\w+_p\.({slots})\s*=", re.M)
  offenders = [f"{p.relative_to(PKG.parent)}: {m.group(0).strip()}"
               for p in PKG.rglob("*.py") for m in pattern.finditer(p.read_text())]
  assert not offenders, "\n".join(offenders)


# ---- public modules --------------------------------------------------------------------------
PUBLIC = ["", ".numpy", ".numpy.linalg", ".lax", ".lax.linalg", ".random", ".nn",
          ".nn.initializers", ".scipy", ".scipy.cluster", ".scipy.cluster.vq", ".scipy.fft",
          ".scipy.integrate", ".scipy.interpolate", ".scipy.linalg", ".scipy.ndimage",
          ".scipy.optimize", ".scipy.signal", ".scipy.sparse", ".scipy.sparse.linalg",
          ".scipy.spatial", ".scipy.spatial.transform",
          ".scipy.special", ".scipy.stats", ".tree_util", ".tree",
          ".errors", ".dtypes", ".debug", ".test_util", ".custom_derivatives", ".ad_checkpoint",
          ".example_libraries.stax", ".example_libraries.optimizers", ".experimental",
          ".custom_batching", ".stages", ".typing", ".core",
          ".extend", ".extend.core", ".extend.linear_util", ".extend.source_info_util",
          ".extend.backend", ".extend.random", ".extend.mlir", ".interpreters",
          ".interpreters.ad", ".interpreters.batching", ".interpreters.mlir",
          ".interpreters.partial_eval", ".flatten_util", ".lib", ".version",
          ".experimental.checkify", ".experimental.hijax", ".experimental.layout",
          ".experimental.ode", ".experimental.mesh_utils", ".experimental.jet",
          ".experimental.pjit", ".experimental.serialize_executable", ".experimental.sparse",
          ".experimental.sparse.linalg", ".experimental.pallas", ".experimental.pallas.tpu",
          ".experimental.pallas.triton", ".experimental.pallas.fuser",
          ".experimental.pallas.tpu_sc", ".experimental.pallas.mosaic_gpu",
          ".experimental.pallas.ops.tpu.example_kernel",
          ".experimental.pallas.ops.tpu.all_gather", ".experimental.pallas.ops.tpu.random",
          ".experimental.pallas.ops.tpu.random.philox",
          ".experimental.pallas.ops.tpu.random.threefry",
          ".experimental.pallas.ops.tpu.random.prng_utils",
          ".experimental.pallas.ops.tpu.flash_attention",
          ".experimental.pallas.ops.tpu.megablox.gmm",
          ".experimental.pallas.ops.tpu.paged_attention",
          ".experimental.pallas.ops.tpu.paged_attention.paged_attention_kernel",
          ".experimental.pallas.ops.tpu.paged_attention.quantization_utils",
          ".experimental.pallas.ops.tpu.paged_attention.util",
          ".experimental.pallas.ops.tpu.ragged_paged_attention",
          ".experimental.pallas.ops.tpu.ragged_paged_attention.kernel",
          ".experimental.pallas.ops.tpu.ragged_paged_attention.tuned_block_sizes",
          ".experimental.shard_alike", ".experimental.random", ".experimental.profiler",
          ".experimental.rnn", ".experimental.custom_partitioning", ".experimental.topologies",
          ".experimental.key_reuse", ".extend.core.primitives",
          ".experimental.colocated_python", ".experimental.compute_on",
          ".experimental.xla_metadata", ".experimental.scheduling_groups",
          ".experimental.control_deps", ".experimental.fused",
          ".api_util", ".sharding", ".profiler", ".ffi",
          ".extend.lowering", ".extend.sharding", ".extend.xla", ".extend.pallas",
          ".extend.ifrt_programs", ".extend.mlir.ir", ".extend.mlir.passmanager",
          ".extend.mlir.dialects", ".extend.mlir.dialects.stablehlo",
          ".extend.mlir.dialects.func", ".interpreters.pxla", ".interpreters.xla", ".tools",
          ".experimental.sparse.ad", ".experimental.sparse.api", ".experimental.sparse.bcoo",
          ".experimental.sparse.bcsr", ".experimental.sparse.coo", ".experimental.sparse.csr",
          ".experimental.sparse.random", ".experimental.sparse.transform",
          ".experimental.sparse.util", ".experimental.sparse.test_util", ".tools.jax_to_ir",
          ".tools.pgo_nsys_converter", ".experimental.colocated_python.api",
          ".experimental.colocated_python.func", ".experimental.colocated_python.obj",
          ".experimental.colocated_python.serialization",
          ".experimental.colocated_python.func_backend",
          ".experimental.colocated_python.obj_backend", ".experimental.buffer_callback",
          ".experimental.transfer", ".experimental.roofline", ".experimental.source_mapper",
          ".experimental.array_serialization",
          ".experimental.array_serialization.serialization",
          ".experimental.array_serialization.pytree_serialization",
          ".experimental.array_serialization.pytree_serialization_utils",
          ".experimental.array_serialization.tensorstore_impl",
          ".experimental.pallas.ops.tpu.splash_attention",
          ".experimental.pallas.ops.tpu.splash_attention.splash_attention_mask",
          ".experimental.pallas.ops.tpu.splash_attention.splash_attention_mask_info",
          ".experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel",
          ".experimental.pallas.ops.gpu", ".experimental.pallas.ops.gpu.softmax",
          ".experimental.pallas.ops.gpu.layer_norm", ".experimental.pallas.ops.gpu.rms_norm",
          ".experimental.pallas.ops.gpu.attention",
          ".experimental.pallas.ops.gpu.decode_attention",
          ".experimental.pallas.ops.gpu.paged_attention"]
# Names arrax offers beyond JAX 0.10.2's module, on purpose.
EXTRAS = {
    ".numpy": {"fix"},   # removed in JAX 0.10; kept as an alias of trunc for older programs
    "": {"install_as_jax"},   # makes `import jax` resolve to arrax (running JAX libraries)
    ".debug": {"jaxpr_graph"},   # a jaxpr drawn as a Graphviz graph
}


@pytest.mark.parametrize("suffix", PUBLIC)
def test_public_module_exports_only_public_names(suffix):
  import types
  ours = importlib.import_module("arrax" + suffix)
  theirs = importlib.import_module("jax" + suffix)
  names = {n for n in dir(ours) if not n.startswith("_")}
  jax_names = {n for n in dir(theirs) if not n.startswith("_")}
  extra = {n for n in names - jax_names - EXTRAS.get(suffix, set())
           if not (isinstance(getattr(ours, n), types.ModuleType)
                   and getattr(ours, n).__name__.startswith("arrax." if suffix else "arrax"))}
  assert not extra, f"arrax{suffix} exports names JAX's module does not have: {sorted(extra)}"


def test_jit_rejects_unknown_keyword():
  with pytest.raises(TypeError, match="static_argnum"):
    arrax.jit(lambda x: x, static_argnum=0)
  # (device and shardings together: JAX's ValueError)
  with pytest.raises(ValueError, match="in_shardings should not be specified"):
    arrax.jit(lambda x: x, device=arrax.devices()[0],
              in_shardings=arrax.sharding.SingleDeviceSharding(arrax.devices()[0]))
