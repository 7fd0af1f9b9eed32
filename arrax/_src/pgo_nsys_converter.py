"""Convert an NVIDIA Nsight Systems profile to the costs text XLA's profile-guided latency
estimator reads (`jax.tools.pgo_nsys_converter`, a script: `python -m
arrax.tools.pgo_nsys_converter --profile_path P --pgle_output_path OUT.pbtxt`).

It runs `nsys stats` (found on PATH) with the NVTX-range-per-kernel report, which writes a CSV
next to the output, then writes one `costs { name: "<hlo op>" cost_us: <avg> }` line per HLO
op named in the NVTX ranges (with --post_process, always on as in JAX: the largest average of
each op), and finally removes the .sqlite files by the profile and the .csv files by the output.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys

_BANNER = ("Script to convert NVIDIA Nsys Profiles to the .pbtxt format. This format is readable "
           "by XLA's Profile Guided Latency Estimator. Usage: pgo_nsys_converter.py "
           "--profile_path <path the nsys profile> --pgle_output_path <path to output .pbtxt>")


def _parser():
  p = argparse.ArgumentParser(
      description="Tool to convert NVIDIA Nsys Profiles to the .pbtxt format")
  p.add_argument("--profile_path", type=str, help="path to nsys profile")
  # (a store_true flag defaulting to True: always on, as in JAX)
  p.add_argument("--post_process", action="store_true", default=True,
                 help="post process pbtxt to get max cost value for each instruction")
  p.add_argument("--pgle_output_path", type=str, help="output directory",
                 default="/opt/paxml/workspace/lhs_pbtxt/temp.pbtxt")
  return p


def _costs(csv_path, post_process, out):
  """Write the costs lines of the report `csv_path` to the open file `out`."""
  op_re = re.compile("hlo_op=(.*)#")
  per_op: dict[str, list] = {}
  with open(csv_path, newline="") as f:
    for row in csv.DictReader(f):
      m = op_re.search(row["NVTX Range"])
      if m is None:
        continue
      us = float(row["Avg (ns)"]) / 1000.0
      if post_process:
        per_op.setdefault(m.group(1), []).append(us)
      else:
        out.write(f'costs {{ name: "{m.group(1)}" cost_us: {us} }}\n')
  for name, us in per_op.items():
    out.write(f'costs {{ name: "{name}" cost_us: {max(us)} }}\n')


def _main(argv=None):
  print(_BANNER)
  nsys = shutil.which("nsys")
  args = _parser().parse_args(argv)
  out_path = args.pgle_output_path
  out_stem = os.path.basename(out_path).partition(".")[0]
  out_dir = os.path.join(os.path.split(out_path)[0], "")
  profile_dir = os.path.join(os.path.split(args.profile_path)[0], "")
  assert isinstance(nsys, str)
  # (older nsys versions call the report `nvtxkernsum`)
  reports = subprocess.run([nsys, "stats", "--help-reports"], capture_output=True,
                           text=True).stdout
  report = "nvtx_kern_sum" if "nvtx_kern_sum" in reports else "nvtxkernsum"
  stats = [nsys, "stats", "--force-overwrite", "true", "--force-export", "true", "--report",
           report, f"{args.profile_path}", "-o", f"{out_path}"]
  print(f"""
    ******Starting stats command******
    {stats}.""")
  subprocess.Popen(stats, stdout=sys.stdout, stderr=sys.stderr).wait()
  with open(out_path, "w", newline="") as out:
    _costs(f"{out_dir}{out_stem}.pbtxt_{report}.csv", args.post_process, out)
  subprocess.call(f"rm {profile_dir}/*.sqlite; rm {out_dir}/*.csv", shell=True)
