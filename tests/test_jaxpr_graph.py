"""arrax.debug.jaxpr_graph (beyond JAX): the DOT text of a jaxpr, checked structurally against
the jaxpr it draws, and its rendering."""
import os
import re
import shutil
import stat

import numpy as np
import pytest

import arrax
import arrax.numpy as jnp
from arrax import lax
from arrax._src import core

# ---- a small structural reader of the DOT text ------------------------------------------------
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[{}\[\];=,]|[A-Za-z_][\w]*|-?\d+(?:\.\d+)?|\S')


def parse(source):
  """(node ids in declaration order, edges, cluster names, labels) of DOT text, checking that
  strings are closed and braces balance."""
  tokens, end = [], 0
  for m in _TOKEN.finditer(source):
    assert not source[end:m.start()].strip(), source[end:m.start()]   # (only spaces between)
    tokens.append(m.group())
    end = m.end()
  for t in tokens:
    if t.startswith('"'):
      assert len(t) >= 2 and t.endswith('"'), t
  assert tokens[:2] == ["digraph", tokens[1]] and tokens[2] == "{" and tokens[-1] == "}"
  depth = 0
  for t in tokens:
    depth += (t == "{") - (t == "}")
    assert depth >= 0
  assert depth == 0
  nodes, edges, clusters, labels = [], [], [], {}
  i = 0
  while i < len(tokens):
    t = tokens[i]
    if t == "subgraph":
      clusters.append(tokens[i + 1])
      i += 2
      continue
    if re.fullmatch(r"n\d+", t):
      if tokens[i + 1] == "->":
        edges.append((t, tokens[i + 2]))
        i += 3
        continue
      assert tokens[i + 1] == "[" and tokens[i + 2:i + 4] == ["label", "="], tokens[i:i + 4]
      nodes.append(t)
      labels[t] = tokens[i + 4][1:-1]
    i += 1
  return nodes, edges, clusters, labels


def all_jaxprs(jaxpr):
  yield jaxpr
  for eqn in jaxpr.eqns:
    for sub in core.jaxprs_in_params(eqn.params):
      yield from all_jaxprs(sub)


def expected_counts(jaxpr):
  """(nodes, solid edges, clusters) the graph of `jaxpr` must have."""
  nodes = edges = clusters = 0
  for j in all_jaxprs(jaxpr):
    nodes += len(j.eqns) + len(j.invars) + len(j.constvars) + len(j.outvars)
    edges += sum(not isinstance(v, core.Literal) for v in j.outvars)
    for eqn in j.eqns:
      edges += len({v for v in eqn.invars if not isinstance(v, core.Literal)})
      clusters += len(core.jaxprs_in_params(eqn.params))
  return nodes, edges, clusters


def check_graph(graph):
  nodes, edges, clusters, labels = parse(graph.source)
  assert len(set(nodes)) == len(nodes)
  declared = set(nodes)
  for a, b in edges:
    assert a in declared and b in declared, (a, b)
  assert all(c.startswith("cluster_") for c in clusters) and len(set(clusters)) == len(clusters)
  n, e, c = expected_counts(graph.jaxpr.jaxpr)
  assert (len(nodes), len(clusters)) == (n, c)
  dashed = graph.source.count("style=dashed, arrowhead=none")
  assert len(edges) == e + dashed and dashed <= c
  assert str(graph) == graph.source
  return nodes, edges, clusters, labels


x22 = np.arange(4, dtype=np.float32).reshape(2, 2)
_const = np.array([1.0, 2.0], np.float32)


def _custom():
  @arrax.custom_jvp
  def f(x):
    return jnp.sin(x)
  f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * t[0]))
  return f


def _custom_vjp():
  @arrax.custom_vjp
  def g(x):
    return x * 3
  g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct * 3,))
  return g


FLAT = {
    "elementwise": (lambda x: jnp.sin(x) * 2 + x, (x22,)),
    "two_inputs_two_outputs": (lambda x, y: (x + y, x @ y), (x22, x22)),
    "constant": (lambda x: x + jnp.asarray(_const), (np.ones(2, np.float32),)),
    "literal_output": (lambda x: (x, 1.0), (x22,)),
    "unused_input": (lambda x, y: x * x, (x22, 1.0)),
    "grad": (arrax.grad(lambda x: (jnp.tanh(x) ** 2).sum()), (x22,)),
    "int_and_bool": (lambda i, b: lax.select(b, i, -i), (np.arange(3), np.array([1, 0, 1], bool))),
}

NESTED = {
    "jit": (lambda x: arrax.jit(lambda y: y * 2)(x) + 1, (x22,), 1),
    "cond": (lambda x: lax.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, x), (x22,), 2),
    "while": (lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2),
                                       (0, x))[1], (x22,), 2),
    "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), (x22,), None),
    "scan": (lambda x: lax.scan(lambda c, t: (c + t, c * t), x[0], x), (x22,), 1),
    "scan_of_jit_of_cond": (lambda x: lax.scan(
        lambda c, t: (arrax.jit(lambda u: lax.cond(u.sum() > 0, jnp.sin, jnp.cos, u))(c + t),
                      None), x[0], x), (x22,), 4),
    "custom_jvp": (lambda x: _custom()(x), (x22,), None),
    "custom_vjp": (lambda x: _custom_vjp()(x), (x22,), None),
    "vmap_of_while": (arrax.vmap(lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2, x)),
                      (np.arange(1.0, 4.0, dtype=np.float32),), 2),
    "where": (lambda x: jnp.where(x > 1, x, 0.0), (x22,), 1),
}


@pytest.mark.parametrize("name", list(FLAT))
def test_flat(name):
  f, args = FLAT[name]
  g = arrax.debug.jaxpr_graph(f)(*args)
  nodes, edges, clusters, labels = check_graph(g)
  j = g.jaxpr.jaxpr
  assert not clusters
  assert len(nodes) == len(j.eqns) + len(j.invars) + len(j.constvars) + len(j.outvars)
  for eqn in j.eqns:   # every equation is a node labelled with its primitive and result types
    assert any(lab.startswith(eqn.primitive.name) and all(
        v.aval.str_short(short_dtypes=True) in lab for v in eqn.outvars)
        for lab in labels.values()), eqn.primitive.name
  assert sum(lab.startswith("const ") for lab in labels.values()) == len(j.constvars)
  assert sum(lab.startswith("out ") for lab in labels.values()) == len(j.outvars)


def test_flat_names_and_types_follow_make_jaxpr():
  g = arrax.debug.jaxpr_graph(lambda x, y: jnp.sin(x) * y)(x22, np.float32(2))
  _, edges, _, labels = check_graph(g)
  text = str(arrax.make_jaxpr(lambda x, y: jnp.sin(x) * y)(x22, np.float32(2)))
  assert "a:f32[2,2]" in labels.values() and "b:f32[]" in labels.values()
  assert "sin\\n-> c:f32[2,2]" in labels.values() and "c:f32[2,2] = sin a" in text
  assert "out 0: d:f32[2,2]" in labels.values()
  assert len(edges) == 4   # a->sin, c->mul, b->mul, mul->out


def test_literal_operand_in_label():
  g = arrax.debug.jaxpr_graph(lambda x: x * 3.0)(x22)
  _, _, _, labels = check_graph(g)
  assert any("mul" in lab and "#1: 3.0:f32[]" in lab for lab in labels.values())


@pytest.mark.parametrize("name", list(NESTED))
def test_nested(name):
  f, args, n_clusters = NESTED[name]
  g = arrax.debug.jaxpr_graph(f)(*args)
  _, _, clusters, _ = check_graph(g)
  assert clusters
  if n_clusters is not None:
    assert len(clusters) == n_clusters
  # every cluster is a subgraph block with a label naming the holding primitive
  for c in clusters:
    block = re.search(rf"subgraph {c} {{\n\s*label=\"([^\"]*)\"", g.source)
    assert block, c


def test_cluster_nesting_depth():
  g = arrax.debug.jaxpr_graph(NESTED["scan_of_jit_of_cond"][0])(x22)
  depth = max_depth = 0
  for line in g.source.splitlines():
    if line.strip().startswith("subgraph"):
      depth += 1
      max_depth = max(max_depth, depth)
    elif line.strip() == "}":
      depth -= 1
  assert max_depth == 3   # scan body > jit > cond branch


def test_static_argnums_and_kwargs():
  f = lambda x, n, *, scale: x * n * scale
  g = arrax.debug.jaxpr_graph(f, static_argnums=(1,))(x22, 3, scale=2.0)
  check_graph(g)
  assert "#1: 3" in g.source
  with pytest.raises(TypeError):
    arrax.debug.jaxpr_graph(f, static_argnums=(1,))(x22, 3)


def test_quoting_of_names():
  def f(x):
    return x + 1
  f.__name__ = 'we"ird\\name'
  g = arrax.debug.jaxpr_graph(lambda x: arrax.jit(f)(x))(x22)
  _, _, _, labels = check_graph(g)
  assert any('jit we\\"ird\\\\name' in lab for lab in labels.values())


def test_render_dot(tmp_path):
  g = arrax.debug.jaxpr_graph(lambda x: jnp.cos(x).sum())(x22)
  for name in ["g.dot", "g.gv"]:
    out = g.render(tmp_path / name)
    assert out == tmp_path / name and (tmp_path / name).read_text() == g.source
  g.render(str(tmp_path / "plain.txt"), format="dot")
  assert (tmp_path / "plain.txt").read_text() == g.source
  with pytest.raises(ValueError, match="format"):
    g.render(tmp_path / "noext")


def test_without_graphviz(tmp_path, monkeypatch):
  monkeypatch.setenv("PATH", str(tmp_path))
  g = arrax.debug.jaxpr_graph(jnp.sin)(x22)
  with pytest.raises(RuntimeError, match="Graphviz"):
    g.render(tmp_path / "g.svg")
  with pytest.raises(RuntimeError, match="install Graphviz"):
    g.render(tmp_path / "g.png")
  assert not (tmp_path / "g.svg").exists()
  assert g._repr_svg_() is None


def test_render_calls_dot(tmp_path, monkeypatch):
  # A stand-in `dot` that records its arguments and input: the plumbing, without Graphviz.
  fake = tmp_path / "bin" / "dot"
  fake.parent.mkdir()
  fake.write_text('#!/bin/sh\necho "<svg args=\'$*\'>"\ncat\n')
  fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
  monkeypatch.setenv("PATH", str(fake.parent) + os.pathsep + os.environ.get("PATH", ""))
  g = arrax.debug.jaxpr_graph(jnp.sin)(x22)
  out = g.render(tmp_path / "g.svg").read_text()
  assert out == "<svg args='-Tsvg'>\n" + g.source
  assert g.render(tmp_path / "g.png").read_text().startswith("<svg args='-Tpng'>")
  assert g.render(tmp_path / "x.svg", format="pdf").read_text().startswith("<svg args='-Tpdf'>")
  assert g._repr_svg_() == out
  fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
  with pytest.raises(RuntimeError, match="broken"):
    g.render(tmp_path / "g2.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_render_with_graphviz(tmp_path):
  g = arrax.debug.jaxpr_graph(NESTED["cond"][0])(x22)
  assert "<svg" in g.render(tmp_path / "g.svg").read_text()
  assert g.render(tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert "<svg" in g._repr_svg_()
