"""`python -m arrax script.py [args]`, `python -m arrax -m module [args]`, `python -m arrax -c code`:
run a JAX program unchanged, with every `import jax` resolving to arrax (see
`arrax.install_as_jax`)."""
import os
import runpy
import sys

from arrax._src.jax_alias import install_as_jax

USAGE = """usage: python -m arrax script.py [args ...]
       python -m arrax -m module [args ...]
       python -m arrax -c code [args ...]
Runs the program with `import jax` (and every `jax.X.Y`) resolving to arrax."""


def main(argv):
  if not argv or argv[0] in ("-h", "--help"):
    print(USAGE, file=sys.stderr if not argv else sys.stdout)
    return 2 if not argv else 0
  install_as_jax()
  if argv[0] == "-m":
    if len(argv) < 2:
      print("python -m arrax: -m needs a module name\n" + USAGE, file=sys.stderr)
      return 2
    sys.argv = [argv[1]] + argv[2:]
    sys.path[0] = os.getcwd()
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  elif argv[0] == "-c":
    if len(argv) < 2:
      print("python -m arrax: -c needs a program\n" + USAGE, file=sys.stderr)
      return 2
    sys.argv = ["-c"] + argv[2:]
    sys.path[0] = ""
    code = compile(argv[1], "<string>", "exec")
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
  else:
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
