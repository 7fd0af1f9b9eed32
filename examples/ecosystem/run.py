"""Run a program on arrax as `python -m arrax` does, after installing the placeholders of
pending.py:  python run.py script.py [args] | python run.py -m module [args]."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pending  # noqa: E402
import arrax.__main__ as arrax_main  # noqa: E402

if __name__ == "__main__":
  pending.install()
  sys.exit(arrax_main.main(sys.argv[1:]))
