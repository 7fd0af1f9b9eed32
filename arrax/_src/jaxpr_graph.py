"""Beyond JAX: `arrax.debug.jaxpr_graph(f)(*args)`, the jaxpr of `f` as a Graphviz graph.

The graph has one node per equation (the primitive, its literal operands and its result types),
one per input, constant and output of the program, and an edge from where each variable is made
to every place it is used. The jaxprs an equation holds (a nested jit, the branches of a cond,
the bodies of scan and while loops, custom_jvp/vjp functions, ...) are drawn as clusters
(`subgraph cluster_...`) with their own inputs and outputs, joined to the equation by a dashed
edge. Variables are named as `make_jaxpr` names them.

`.source` is the DOT text (Graphviz's language); `.render(path)` writes it (.dot/.gv) or has
Graphviz's `dot` program draw it (.svg, .png, .pdf, ...); in a notebook the graph shows as SVG
when `dot` is installed.
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

from arrax._src import core
from arrax._src.api import make_jaxpr
from arrax._src.jaxpr_printer import PpContext, literal_str

_TEXT_FORMATS = ("dot", "gv")

_STYLE = {
    "input": 'shape=ellipse, style=filled, fillcolor="#dbe9f6"',
    "const": 'shape=ellipse, style=filled, fillcolor="#eeeeee"',
    "output": 'shape=ellipse, style=filled, fillcolor="#dcf0dc"',
    "eqn": 'shape=box, style="rounded,filled", fillcolor="#fff6d5"',
}


def _quote(text):
  """`text` as a DOT string (escapes; newlines become centered line breaks)."""
  return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type(aval):
  return aval.str_short(short_dtypes=True)


class _Builder:
  def __init__(self):
    self.names = PpContext()
    self.lines = []
    self.count = 0
    self.clusters = 0

  def node(self, kind, label, indent):
    nid = f"n{self.count}"
    self.count += 1
    self.lines.append(f"{indent}{nid} [label={_quote(label)}, {_STYLE[kind]}];")
    return nid

  def edge(self, src, dst, indent, attrs=""):
    self.lines.append(f"{indent}{src} -> {dst}{f' [{attrs}]' if attrs else ''};")

  def var_label(self, v):
    """`name:type` (names given in order of definition, as make_jaxpr gives them)."""
    return f"{self.names.name(v)}:{_type(v.aval)}"

  def jaxpr(self, jaxpr, indent):
    """Add the nodes and edges of `jaxpr`; its input node ids."""
    made = {}   # Var -> the id of the node making it
    for v in jaxpr.constvars:
      made[v] = self.node("const", f"const {self.var_label(v)}", indent)
    inputs = []
    for v in jaxpr.invars:
      nid = self.node("input", self.var_label(v), indent)
      made[v] = nid
      inputs.append(nid)
    for eqn in jaxpr.eqns:
      self.equation(eqn, made, indent)
    for i, v in enumerate(jaxpr.outvars):
      if isinstance(v, core.Literal):
        self.node("output", f"out {i}: {literal_str(v)}", indent)
        continue
      nid = self.node("output", f"out {i}: {self.var_label(v)}", indent)
      self.edge(made[v], nid, indent)
    return inputs

  def equation(self, eqn, made, indent):
    outs = ", ".join(self.var_label(v) for v in eqn.outvars) or "()"
    literals = [f"#{i}: {literal_str(x)}" for i, x in enumerate(eqn.invars)
                if isinstance(x, core.Literal)]
    name = eqn.primitive.name
    if "name" in eqn.params and isinstance(eqn.params["name"], str):
      name += f" {eqn.params['name']}"
    label = "\n".join([name, *literals, "-> " + outs])
    nid = self.node("eqn", label, indent)
    seen = set()
    for x in eqn.invars:
      if isinstance(x, core.Literal) or x in seen:
        continue
      seen.add(x)
      self.edge(made[x], nid, indent, f"label={_quote(self.names.name(x))}")
    for v in eqn.outvars:
      if not isinstance(v, core.DropVar):
        made[v] = nid
    for key, sub in _sub_jaxprs(eqn.params):
      cid = f"cluster_{self.clusters}"
      self.clusters += 1
      self.lines.append(f"{indent}subgraph {cid} {{")
      inner = indent + "  "
      self.lines.append(f"{inner}label={_quote(f'{eqn.primitive.name} {key}')};")
      self.lines.append(f'{inner}style="rounded,dashed"; color="#888888";')
      start = self.count
      self.jaxpr(sub, inner)
      first = f"n{start}" if self.count > start else None
      self.lines.append(f"{indent}}}")
      if first is not None:
        self.edge(nid, first, indent, f'style=dashed, arrowhead=none, lhead={cid}')


def _sub_jaxprs(params):
  """(parameter name, open jaxpr) of every jaxpr an equation's params hold."""
  for key, value in params.items():
    items = value if isinstance(value, (tuple, list)) else (value,)
    many = isinstance(value, (tuple, list))
    for i, x in enumerate(items):
      label = f"{key}[{i}]" if many else key
      if isinstance(x, core.ClosedJaxpr):
        yield label, x.jaxpr
      elif isinstance(x, core.Jaxpr):
        yield label, x


def jaxpr_dot(closed, name="jaxpr"):
  """The DOT text of the ClosedJaxpr (or Jaxpr) `closed`."""
  jaxpr = closed.jaxpr if isinstance(closed, core.ClosedJaxpr) else closed
  b = _Builder()
  b.jaxpr(jaxpr, "  ")
  head = [f"digraph {_quote(name)} {{",
          "  compound=true; rankdir=TB;",
          '  node [fontname="monospace", fontsize=10];',
          '  edge [fontname="monospace", fontsize=9];']
  return "\n".join(head + b.lines + ["}"]) + "\n"


class JaxprGraph:
  """The graph of a jaxpr: `.source` (DOT text, also `str()`), `.render(path)`, and SVG in
  notebooks (with Graphviz installed)."""

  def __init__(self, source, jaxpr=None):
    self.source = source
    self.jaxpr = jaxpr   # (the ClosedJaxpr drawn)

  def __str__(self):
    return self.source

  def __repr__(self):
    nodes = len(re.findall(r"^\s*n\d+ \[", self.source, re.M))
    return f"<JaxprGraph of {nodes} nodes>"

  def _run_dot(self, fmt, extra=()):
    exe = shutil.which("dot")
    if exe is None:
      raise RuntimeError(
          f"Rendering a jaxpr graph as {fmt} needs Graphviz's `dot` program, which is not on "
          "PATH: install Graphviz (https://graphviz.org/download/, e.g. `apt install graphviz` "
          "or `brew install graphviz`), or render to a .dot file.")
    res = subprocess.run([exe, f"-T{fmt}", *extra], input=self.source.encode(),
                         capture_output=True, check=False)
    if res.returncode:
      raise RuntimeError(f"Graphviz's dot failed ({res.returncode}): "
                         f"{res.stderr.decode(errors='replace').strip()}")
    return res.stdout

  def _repr_svg_(self):
    if shutil.which("dot") is None:
      return None
    return self._run_dot("svg").decode()

  def render(self, path, format=None):  # noqa: A002
    """Write the graph to `path`: DOT text for .dot/.gv, else drawn by Graphviz in the format
    `format` or the file's suffix (svg, png, pdf, ...). Returns the path."""
    path = pathlib.Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if not fmt:
      raise ValueError(f"render: cannot tell the format of {str(path)!r}; give a suffix "
                       "(.dot, .svg, .png, ...) or format=")
    if fmt in _TEXT_FORMATS:
      path.write_text(self.source)
    else:
      path.write_bytes(self._run_dot(fmt))
    return path


def jaxpr_graph(f, *, static_argnums=()):
  """A function of `f`'s arguments giving the graph of `f`'s jaxpr for them (a JaxprGraph)."""
  make = make_jaxpr(f, static_argnums=static_argnums)

  def graph(*args, **kwargs):
    closed = make(*args, **kwargs)
    return JaxprGraph(jaxpr_dot(closed, getattr(f, "__name__", "jaxpr")), closed)

  graph.__name__ = f"jaxpr_graph({getattr(f, '__name__', 'fun')})"
  return graph
