"""The type stub (`_bagscope.pyi`) says what the native module takes: every method of `Bag`
has the parameters, kinds and defaults its Rust signature gives (defaults pyo3 cannot print
are checked by what they do)."""

from __future__ import annotations

import ast
import inspect

import bagscope
from conftest import ROOT

STUB = ROOT / "crates" / "python" / "python" / "bagscope" / "_bagscope.pyi"


def stub_methods(cls: str) -> dict:
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
    raise AssertionError(f"no class {cls} in the stub")


def params(f: ast.FunctionDef) -> list:
    """(name, kind, default source or None) of each parameter but `self`."""
    a = f.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(pos, defaults):
        out.append((p.arg, "positional", None if d is None else ast.unparse(d)))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "keyword", None if d is None else ast.unparse(d)))
    return [x for x in out if x[0] != "self"]


def runtime(fn) -> list:
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        kind = "keyword" if p.kind == p.KEYWORD_ONLY else "positional"
        d = None if p.default is p.empty else p.default
        out.append((p.name, kind, d))
    return out


def test_bag_methods_match_the_stub() -> None:
    methods = stub_methods("Bag")
    checked = 0
    for name, f in methods.items():
        if name.startswith("__") or name == "from_bytes":
            continue
        fn = getattr(bagscope.Bag, name, None)
        if fn is None or not callable(fn) or fn.__text_signature__ is None:
            continue
        got = runtime(fn)
        if [k for _, k, _ in got] and all(
            p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in inspect.signature(fn).parameters.values()
            if p.name != "self"
        ):
            # Filled from the options types (`*args, **kwargs`): test_options.py compares
            # those with the stub.
            continue
        want = params(f)
        assert [(n, k) for n, k, _ in got] == [(n, k) for n, k, _ in want], name
        for (n, _, d), (_, _, s) in zip(got, want):
            # pyo3 prints "..." for a default it cannot show as a literal.
            if d is not Ellipsis and s is not None and d is not None:
                assert ast.literal_eval(s) == d, (name, n, s, d)
        checked += 1
    assert checked >= 3


def test_defaults_pyo3_cannot_print_are_the_stubs() -> None:
    b = bagscope.open(ROOT / "bags" / "sensors")
    f = stub_methods("Bag")["timing_batches"]
    (_, _, rows), _ = params(f)
    assert b.timing_batches().rows_per_batch == ast.literal_eval(rows)
