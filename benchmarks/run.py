"""Benchmark arrax against JAX and NumPy, each side in its own fresh process; report ratios.

    python benchmarks/run.py                     # every benchmark, 3 rounds
    python benchmarks/run.py conv fft --rounds 5 # those whose name contains "conv" or "fft"
    python benchmarks/run.py --list              # the benchmarks, by module
    python benchmarks/run.py --markdown out.md --json out.json
    python benchmarks/run.py --from-json out.json --markdown out.md   # re-render saved results

For each benchmark and round, `benchmarks/worker.py --lib L --bench NAME` runs once per library
in a fresh process (warm-up, then the median of several samples), alternating which of arrax and
JAX goes first from round to round; NumPy runs after them. Two XLA clients in one process share
threads and skew each other, hence the separate processes. On a shared machine absolute times
drift; the arrax/JAX ratio of each round (both measured close together) is what to read.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")


def list_benchmarks(python):
  out = subprocess.run([python, WORKER, "--list"], capture_output=True, text=True, check=True)
  return json.loads(out.stdout)


def run_worker(python, lib, bench, args):
  cmd = [python, WORKER, "--lib", lib, "--bench", bench, "--repeat", str(args.repeat)]
  if args.min_time:
    cmd += ["--min-time", str(args.min_time)]
  try:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
  except subprocess.TimeoutExpired:
    return {"error": f"timeout after {args.timeout}s"}
  for line in proc.stdout.splitlines():
    if line.startswith("RESULT "):
      return json.loads(line[len("RESULT "):])
  tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
  return {"error": f"exit {proc.returncode}: {tail}"}


def _order(libs, rnd):
  xla = [lib for lib in ("arrax", "jax") if lib in libs]
  if rnd % 2:
    xla.reverse()
  return xla + [lib for lib in libs if lib not in ("arrax", "jax")]


def fmt_time(t):
  if t is None:
    return "-"
  if t >= 1:
    return f"{t:.2f} s"
  if t >= 1e-3:
    return f"{t * 1e3:.2f} ms"
  return f"{t * 1e6:.1f} us"


def _med(xs):
  xs = [x for x in xs if x is not None]
  return statistics.median(xs) if xs else None


def summarize(entry):
  """Medians over rounds and the per-round ratios of one benchmark's results: `r_jax` and
  `r_numpy` per round (of the processes' median wall times), `r_best` (best sample of all
  rounds, arrax over JAX) and `r_cpu` (median over rounds of the ratio of CPU times)."""
  rounds = entry["rounds"]

  def times(lib, key="median"):
    return [r.get(lib, {}).get(key) for r in rounds]

  def ratios(other, key="median"):
    return [a / o if a is not None and o else None
            for a, o in zip(times("arrax", key), times(other, key))]

  def best(lib):
    xs = [t for t in times(lib, "min") if t is not None]
    return min(xs) if xs else None
  ba, bj = best("arrax"), best("jax")
  return {lib: _med(times(lib)) for lib in ("arrax", "jax", "numpy")} | {
      "r_jax": ratios("jax"), "r_numpy": ratios("numpy"),
      "r_best": ba / bj if ba and bj else None,
      "r_cpu": _med(ratios("jax", "cpu_median")),
      "errors": sorted({f"{lib}: {v['error']}" for r in rounds for lib, v in r.items()
                        if "error" in v})}


def _f(r):
  return "-" if r is None else f"{r:.2f}"


def _ratio_text(rs):
  rs = [r for r in rs if r is not None]
  return ", ".join(f"{r:.2f}" for r in rs) if rs else "-"


def print_row(entry, file=sys.stdout):
  s = summarize(entry)
  rj, rn = _med(s["r_jax"]), _med(s["r_numpy"])
  flag = " !" if rj is not None and rj > 1.1 * max(entry["target"], 1.0) else ""
  print(f"{entry['name']:<26}{fmt_time(s['arrax']):>11}{fmt_time(s['jax']):>11}"
        f"{fmt_time(s['numpy']):>11}  {('%.2f' % rj) if rj else '-':>5} [{_ratio_text(s['r_jax'])}]"
        f" best {_f(s['r_best'])} cpu {_f(s['r_cpu'])}"
        f"  <={entry['target']}{flag}   np {('%.2f' % rn) if rn else '-'}", file=file, flush=True)
  for e in s["errors"]:
    print(f"    error {e}", file=file)


def baseline_lines(results):
  by_name = {e["name"]: e for e in results}
  out = []
  for e in results:
    base = by_name.get(e.get("baseline"))
    if base:
      a, b = summarize(e)["arrax"], summarize(base)["arrax"]
      if a and b:
        out.append(f"arrax {e['name']} / arrax {base['name']} = {a / b:.2f}")
  return out


def markdown(results, meta):
  lines = [
      f"Run {meta['date']} on {meta['machine']}; {meta['rounds']} rounds, each library in its "
      f"own fresh process per round (arrax and JAX alternating first), each process the median "
      f"of {meta['repeat']} samples after warm-up. Times are medians over rounds; "
      f"best/best: the fastest sample of all rounds, arrax over JAX; CPU time: median over "
      f"rounds of the ratio of process CPU time per call.", "",
      "| benchmark | arrax | JAX | NumPy | arrax/JAX per round | arrax/JAX median | best/best "
      "| CPU time | target | arrax/NumPy |",
      "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
  for e in results:
    s = summarize(e)
    rj, rn = _med(s["r_jax"]), _med(s["r_numpy"])
    bold = rj is not None and rj > 1.1 * max(e["target"], 1.0)
    rjt = "-" if rj is None else (f"**{rj:.2f}**" if bold else f"{rj:.2f}")
    lines.append(f"| `{e['name']}` | {fmt_time(s['arrax'])} | {fmt_time(s['jax'])} | "
                 f"{fmt_time(s['numpy'])} | {_ratio_text(s['r_jax'])} | {rjt} | "
                 f"{_f(s['r_best'])} | {_f(s['r_cpu'])} | "
                 f"<= {e['target']} | {'-' if rn is None else f'{rn:.2f}'} |")
  errors = [f"- `{e['name']}`: {err}" for e in results for err in summarize(e)["errors"]]
  base = baseline_lines(results)
  if base:
    lines += ["", "Against arrax's own baseline (same computation written another way):", ""]
    lines += [f"- {b}" for b in base]
  if errors:
    lines += ["", "Errors:", ""] + errors
  return "\n".join(lines) + "\n"


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog="\n".join(__doc__.splitlines()[1:]))
  p.add_argument("patterns", nargs="*", help="run benchmarks whose name contains one of these")
  p.add_argument("--rounds", type=int, default=3)
  p.add_argument("--repeat", type=int, default=7, help="timing samples per process")
  p.add_argument("--min-time", type=float, default=None, help="seconds per sample")
  p.add_argument("--libs", default="arrax,jax,numpy")
  p.add_argument("--timeout", type=float, default=1800, help="seconds per worker process")
  p.add_argument("--python", default=sys.executable, help="interpreter for the workers")
  p.add_argument("--list", action="store_true")
  p.add_argument("--markdown", help="write a markdown table here")
  p.add_argument("--json", help="write the raw results here")
  p.add_argument("--from-json", action="append", default=[],
                 help="render saved results (repeatable; later files win) instead of running")
  args = p.parse_args(argv)

  if args.from_json:
    merged, meta = {}, None
    for path in args.from_json:
      with open(path) as f:
        data = json.load(f)
      meta = meta or data["meta"]
      merged.update({e["name"]: e for e in data["results"]})
    order = [b["name"] for b in list_benchmarks(args.python)]
    results = sorted(merged.values(), key=lambda e: order.index(e["name"])
                     if e["name"] in order else len(order))
    for e in results:
      print_row(e)
    if args.markdown:
      with open(args.markdown, "w") as f:
        f.write(markdown(results, meta))
    return

  benches = list_benchmarks(args.python)
  if args.list:
    for b in benches:
      print(f"{b['module'] + '.' + b['name']:<38} {'/'.join(b['libs']):<18} {b['doc']}")
    return
  if args.patterns:
    benches = [b for b in benches if any(pat in b["name"] for pat in args.patterns)]
  want = args.libs.split(",")
  meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
          "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                     f"{platform.system()} {platform.release()}, Python "
                     f"{platform.python_version()}",
          "rounds": args.rounds, "repeat": args.repeat}
  print(f"{'benchmark':<26}{'arrax':>11}{'jax':>11}{'numpy':>11}  arrax/jax [per round]"
        f"  target   arrax/numpy", flush=True)
  results = []
  for b in benches:
    libs = [lib for lib in b["libs"] if lib in want]
    entry = {"name": b["name"], "module": b["module"], "target": b["target"],
             "baseline": b["baseline"], "doc": b["doc"], "rounds": []}
    start = time.time()
    for rnd in range(args.rounds):
      entry["rounds"].append({lib: run_worker(args.python, lib, b["name"], args)
                              for lib in _order(libs, rnd)})
    entry["wall"] = time.time() - start
    results.append(entry)
    print_row(entry)
    if args.json:   # saved as we go, so an interrupted run keeps what it measured
      with open(args.json, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
  for line in baseline_lines(results):
    print(line)
  if args.markdown:
    with open(args.markdown, "w") as f:
      f.write(markdown(results, meta))


if __name__ == "__main__":
  main()
