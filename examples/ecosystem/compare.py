"""Run the ecosystem examples (and optionally optax's shipped tests) on arrax and on JAX 0.10.2,
each in its own venv, and compare them.

  python compare.py --arrax-python A/bin/python --jax-python J/bin/python [--optax-tests]

The arrax venv must not contain jax (checked): there the programs run as `python -m arrax ...`,
which resolves `import jax` to arrax. Exit status 1 if any example prints
something else than on JAX.
"""
import argparse
import difflib
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = ["optax_mlp.py", "chex_demo.py", "flax_linen.py", "flax_nnx.py", "equinox_mlp.py"]
OPTAX_TESTS = ["_src/alias_test.py", "_src/transform_test.py", "_src/update_test.py",
               "_src/utils_test.py", "transforms/_clipping_test.py",
               "schedules/_schedule_test.py", "_src/base_test.py", "_src/combine_test.py",
               "_src/numerics_test.py"]


def run(cmd, cwd=None, timeout=3600):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  env.pop("PYTHONPATH", None)
  return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def compare_examples(arrax_py, jax_py):
  bad = 0
  for name in EXAMPLES:
    if not (HERE / name).exists():
      continue
    j = run([jax_py, str(HERE / name)], cwd=HERE)
    a = run([arrax_py, "-m", "arrax", str(HERE / name)], cwd=HERE)
    if j.returncode != 0:
      print(f"{name}: fails on JAX:\n{j.stderr[-2000:]}")
      bad += 1
      continue
    if a.returncode != 0:
      print(f"{name}: FAILS on arrax:\n{a.stderr[-3000:]}")
      bad += 1
      continue
    if a.stdout == j.stdout:
      print(f"{name}: same output ({len(j.stdout.splitlines())} lines)")
    else:
      bad += 1
      print(f"{name}: DIFFERENT output (- JAX, + arrax):")
      sys.stdout.writelines(difflib.unified_diff(j.stdout.splitlines(True),
                                                 a.stdout.splitlines(True), "jax", "arrax"))
  return bad


def _summary(text):
  last = text.strip().splitlines()[-1] if text.strip() else ""
  counts = {sub + k: int(v) for v, sub, k in
            re.findall(r"(\d+) (subtests )?(passed|failed|errors?|skipped)", last)}
  failed = {line.split(" ")[1] for line in text.splitlines()
            if line.startswith(("FAILED ", "ERROR "))}
  return counts, failed


def compare_optax_tests(arrax_py, jax_py, pytest_args):
  def site(py):   # (found without importing optax: in the arrax venv that needs `-m arrax`)
    code = "import importlib.util as u; print(u.find_spec('optax').submodule_search_locations[0])"
    return run([py, "-c", code]).stdout.strip()
  args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", *pytest_args, *OPTAX_TESTS]
  j = run([jax_py, *args], cwd=site(jax_py))
  a = run([arrax_py, "-m", "arrax", *args], cwd=site(arrax_py))
  (jc, jf), (ac, af) = _summary(j.stdout), _summary(a.stdout)
  print(f"optax tests on JAX:   {jc}")
  print(f"optax tests on arrax: {ac}")
  only_arrax = sorted(af - jf)
  print(f"failing on arrax only ({len(only_arrax)}):")
  for t in only_arrax:
    print("  ", t)
  only_jax = sorted(jf - af)
  print(f"failing on JAX only ({len(only_jax)}):")
  for t in only_jax:
    print("  ", t)
  return 0


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--arrax-python", required=True)
  p.add_argument("--jax-python", required=True)
  p.add_argument("--optax-tests", action="store_true")
  p.add_argument("--pytest-args", default="")
  args = p.parse_args()
  leak = run([args.arrax_python, "-c", "import importlib.util as u; print(u.find_spec('jax'))"])
  if leak.stdout.strip() != "None":
    sys.exit(f"the arrax venv has jax installed ({leak.stdout.strip()}); it must not")
  bad = compare_examples(args.arrax_python, args.jax_python)
  if args.optax_tests:
    compare_optax_tests(args.arrax_python, args.jax_python, args.pytest_args.split())
  sys.exit(1 if bad else 0)


if __name__ == "__main__":
  main()
