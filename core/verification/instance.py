"""A VNN-LIB 2.0 query with its model files, as one network and one property.

:func:`compile_query` loads each declared network from its ONNX file (an ``equal-to`` copy
from the file of the network it copies; hidden nodes as extra outputs), checks that the
declarations fit the files (inputs and outputs by position and size, element types unless the
query is written in ``real`` throughout) and builds an :class:`Instance`:

- ``network``: every declared network side by side (:meth:`Network.stack`), each giving its
  outputs then its hidden nodes; when a comparison mixes inputs with other variables, the
  inputs too (:meth:`Network.with_inputs`). Its inputs are the *free* input coordinates
  ``z``: the input equalities every disjunct shares (``X_g[1] == X_f[1]``) are eliminated
  exactly, ``x = x0 + N z`` in rational arithmetic, a later-declared element expressed by
  earlier ones, so a copy's input is its original's value digit for digit.
- ``spec``: a :class:`~polytrav.verification.vnnlib.VnnlibSpec` over ``z``: per disjunct, the
  comparisons of inputs alone give the input region, the others the unsafe rows (strict
  ``<`` read as ``<=``: a proof of the closed set is a proof of the strict one).

:meth:`Instance.witness` turns a counterexample of the spec into the standard's assignment
and checks it for real: inputs rounded to the model's precision (a coordinate the query fixes
keeps its exact constant), every network run by onnxruntime, and every comparison of some
disjunct evaluated exactly, in rational arithmetic, on the values as printed (strict ones
strictly).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from polytrav.model.network import Network
from polytrav.verification.query import Atom, Query, QueryNetwork, Variable
from polytrav.verification.vnnlib import VnnlibCase, VnnlibSpec
from polytrav.vocabulary.errors import RegionError
from polytrav.vocabulary.tolerances import WITNESS_GAP

__all__ = ["Instance", "Witness", "compile_query", "is_real_query"]

#: Parts of each input box the float32 rounding bound may split it into.
FLOAT32_BOXES = 8
#: An unbounded input is searched over ``±SEARCH_SCALE`` times the query's largest constant.
SEARCH_SCALE = 10.0

_HOLDS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b,
          ">": lambda a, b: a > b, "==": lambda a, b: a == b}
_SIGNS = {"<=": (1,), "<": (1,), ">=": (-1,), ">": (-1,), "==": (1, -1)}


def is_real_query(query: Query) -> bool:
    """Whether every declared variable has the element type ``real`` (§3.5: consent to
    reading the models as real-valued functions)."""
    return all(v.element_type == "real" for v in query.variables.values())


@dataclass(frozen=True)
class Witness:
    """A counterexample as the standard prints it: every variable's values (exact
    :class:`~fractions.Fraction` for constants the query fixes, else floats), and whether
    some disjunct holds on them exactly (``why`` says what failed when not)."""

    values: dict
    holds: bool
    why: str = ""


@dataclass(eq=False)
class Instance:
    """A query made one network and one property (see the module doc)."""

    query: Query
    network: Network
    spec: VnnlibSpec
    models: dict          #: declared network name -> its model file (copies: the original's)
    origin: tuple         #: x0, one Fraction per input element
    basis: tuple          #: N: per input element, {free element's position: Fraction}
    free: tuple           #: the input elements that are the network's inputs z
    at: dict              #: output or hidden variable -> its first row among the outputs
    #: input regions ``(lower, upper, A, b)`` of disjuncts that constrain no output: every
    #: point of one is a counterexample
    everywhere: tuple = ()
    #: input elements the query leaves unbounded (searched in a box: no proof of ``unsat``)
    unbounded: tuple = ()
    #: each declared network alone, in declaration order
    parts: tuple = ()

    def widened(self, max_boxes: int = FLOAT32_BOXES) -> VnnlibSpec:
        """The spec with every unsafe row ``c y <= d`` widened to ``c y <= d + |c| E``, ``E``
        bounding how far onnxruntime's float32 evaluation of each model is from the exact
        function over the case's box (:func:`polytrav.bounds.rounding.float32_error`; inputs
        passed through are exact): a proof of the widened spec holds for float32."""
        from polytrav.bounds.rounding import float32_error

        cases = []
        for case in self.spec.cases:
            lo, hi = self._input_box(case.lower, case.upper)
            E = np.zeros(self.spec.n_outputs)
            at = 0
            for net in self.query.networks:
                size = sum(v.size for v in net.inputs)
                part = float32_error(self.models[net.name], lo[at:at + size], hi[at:at + size],
                                     extra_outputs=[v.onnx_name for v in net.hidden],
                                     max_boxes=max_boxes)
                for v in net.outputs + net.hidden:
                    start = self.at[v.name]
                    E[start:start + v.size] = part[:v.size]
                    part = part[v.size:]
                at += size
            cases.append(VnnlibCase(case.lower, case.upper, case.A, case.b, tuple(
                (C, d + np.abs(C) @ E) for C, d in case.unsafe)))
        return VnnlibSpec(self.spec.n_inputs, self.spec.n_outputs, tuple(cases))

    def _input_box(self, lower: np.ndarray, upper: np.ndarray) -> tuple:
        """Bounds of every input element over the box ``[lower, upper]`` of ``z``."""
        N, x0 = _dense(self.origin, self.basis, len(self.free))
        lo = x0 + np.clip(N, 0, None) @ lower + np.clip(N, None, 0) @ upper
        hi = x0 + np.clip(N, 0, None) @ upper + np.clip(N, None, 0) @ lower
        return lo, hi

    def tightened(self) -> VnnlibSpec:
        """The spec with every unsafe row ``c y <= d`` moved in by :data:`WITNESS_GAP`
        ``* (1 + |d|)``: a search there finds counterexamples of strict comparisons (and of
        ones whose boundary float32 evaluation could miss), never a proof."""
        cases = tuple(VnnlibCase(c.lower, c.upper, c.A, c.b, tuple(
            (C, d - WITNESS_GAP * (1 + np.abs(d))) for C, d in c.unsafe)) for c in self.spec.cases)
        return VnnlibSpec(self.spec.n_inputs, self.spec.n_outputs, cases)

    def inner_points(self):
        """A point deep inside each of :attr:`everywhere` (the Chebyshev centre)."""
        return [_centre(*region) for region in self.everywhere]

    def free_inputs(self, inputs: dict) -> np.ndarray:
        """The network input ``z`` of full input values (input variable name -> flat values,
        for every declared input variable)."""
        x = np.concatenate([np.asarray(inputs[v.name], float).reshape(-1)
                            for v in self._inputs_in_order()])
        return x[list(self.free)]

    def is_constant(self, variable: Variable) -> bool:
        """Whether the model computes ``variable`` (an output or hidden node) as a constant."""
        start = self.at[variable.name]
        return not self.network.weights[-1][start:start + variable.size].any()

    def witness(self, z) -> Witness:
        """The assignment at the network input ``z`` and whether it is a real counterexample."""
        x = self._inputs(np.asarray(z, float).reshape(-1))
        values, at = {}, 0
        for v in self._inputs_in_order():
            values[v.name] = x[at:at + v.size]
            at += v.size
        for net in self.query.networks:
            got = _run_onnx(self.models[net.name], [values[v.name] for v in net.inputs],
                            [v.onnx_name for v in net.hidden])
            for v, arr in zip(net.outputs + net.hidden, got):
                values[v.name] = arr.reshape(-1).tolist()
        exact = {name: [_as_fraction(e) for e in elems] for name, elems in values.items()}
        for k, clause in enumerate(self.query.dnf):
            failed = next((a for a in clause if not _holds(a, exact)), None)
            if failed is None:
                return Witness(values, True)
            why = f"disjunct {k}: {failed} fails on the values onnxruntime computed"
        return Witness(values, False, why)

    def _inputs_in_order(self) -> list[Variable]:
        return [v for net in self.query.networks for v in net.inputs]

    def _inputs(self, z: np.ndarray) -> list:
        """Every input element: exact constants where fixed, else rounded to the model's
        input precision (kept inside the element's bounds) and exact from there on."""
        dtypes = _input_dtypes(self)
        lower, upper = self._element_bounds()
        zq = []
        for j, i in enumerate(self.free):
            if i in lower and lower[i] == upper.get(i):  # fixed by the query: its constant
                zq.append(lower[i])
                continue
            value = _rounded(float(z[j]), dtypes[i], lower.get(i), upper.get(i))
            zq.append(Fraction(value))
        x, free_at = [], {i: j for j, i in enumerate(self.free)}
        for i, (x0, row) in enumerate(zip(self.origin, self.basis)):
            if i in free_at:
                value = zq[free_at[i]]
                fixed = i in lower and lower[i] == upper.get(i)
                x.append(value if fixed or value != Fraction(float(value)) else float(value))
                continue
            value = x0 + sum((c * zq[j] for j, c in row.items()), Fraction(0))
            x.append(value if not row or value != Fraction(float(value)) else float(value))
        return x

    def _element_bounds(self) -> tuple[dict, dict]:
        """Exact bounds of each free element from the shared single-element comparisons."""
        lower, upper = {}, {}
        shared = set.intersection(*(set(c) for c in self.query.clauses)) if \
            self.query.clauses else set()
        offsets = _offsets(self._inputs_in_order())
        for k in shared:
            atom = self.query.atoms[k]
            if len(atom.terms) != 1 or atom.terms[0].variable not in offsets:
                continue
            t = atom.terms[0]
            i, bound = offsets[t.variable] + t.flat, atom.constant / t.coefficient
            up = (atom.op in ("<=", "<")) == (t.coefficient > 0)
            if atom.op in ("==",) or up:
                upper[i] = min(upper.get(i, bound), bound)
            if atom.op in ("==",) or not up:
                lower[i] = max(lower.get(i, bound), bound)
        return lower, upper


# ----------------------------------------------------------------------------- compiling


def compile_query(query: Query, models: dict) -> Instance:
    """The :class:`Instance` of ``query`` with ``models`` (declared network name -> ONNX
    file, one for each network not declared ``equal-to`` another).

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError
        A mapping that does not fit the declarations, a declaration that does not fit its
        model (count, size or, unless the query is all ``real``, element type), or an
        equality between inputs that only some disjuncts state.
    polytrav.vocabulary.errors.RegionError
        Equalities between inputs that contradict each other.
    polytrav.vocabulary.errors.NetworkError
        A model that cannot be loaded (the op and node named).
    """
    from polytrav.model.loaders.onnx import load_onnx

    files = {n.name: Path(models[n.equal_to or n.name]) for n in query.networks}
    nets = []
    for n in query.networks:
        _check_ports(query, n, files[n.name])
        nets.append(load_onnx(files[n.name], extra_outputs=[v.onnx_name for v in n.hidden]))
    network = nets[0] if len(nets) == 1 else Network.stack(nets, names=[n.name for n in
                                                                        query.networks])
    inputs = [v for n in query.networks for v in n.inputs]
    x_at = _offsets(inputs)
    y_at = _offsets([v for n in query.networks for v in n.outputs + n.hidden])
    n_x, n_y = sum(v.size for v in inputs), network.n_outputs
    variables = query.variables
    kinds = [_kinds(query, a, variables) for a in query.atoms]  # once per atom, not per clause
    mixed = any(k == {"input", "other"} for k in kinds)
    if mixed:
        network = network.with_inputs()
        y_at.update({name: n_y + at for name, at in x_at.items()})
    origin, basis, free, used = _eliminate(query, x_at, n_x)
    if used:
        N, x0 = _dense(origin, basis, len(free))
        network = network.compose_input(N, x0)
    cases: dict = {}
    everywhere: list = []
    unbounded: list = []
    regions: dict = {}  # clauses often share their input atoms (one box, many unsafe sets)
    for clause in query.clauses:
        region_at = tuple(k for k in clause if k not in used and kinds[k] == {"input"})
        other = [query.atoms[k] for k in clause if kinds[k] != {"input"}]
        if any(not a.terms and not _HOLDS[a.op](0, a.constant) for a in other):
            continue  # a false comparison of constants: no counterexample here
        if region_at not in regions:
            regions[region_at] = _region(query, [query.atoms[k] for k in region_at], x_at,
                                         origin, basis, free, unbounded)
        region = regions[region_at]
        if region is None:
            continue
        if not any(a.terms for a in other):  # every input of the region is a counterexample
            everywhere.append(region)
            continue
        C, d = _unsafe(query, [a for a in other if a.terms], y_at, network.n_outputs)
        unsafe = cases.setdefault(_key(*region), (region, {}))[1]
        unsafe.setdefault(_key(C, d), (C, d))
    spec = VnnlibSpec(network.n_inputs, network.n_outputs,
                      tuple(VnnlibCase(*r, tuple(u.values())) for r, u in cases.values()))
    return Instance(query, network, spec, {n: str(p) for n, p in files.items()},
                    tuple(origin), tuple(basis), tuple(free), y_at,
                    tuple(everywhere), tuple(unbounded), tuple(nets))


def _dense(origin, basis, n_free: int) -> tuple[np.ndarray, np.ndarray]:
    """``N`` and ``x0`` of ``x = x0 + N z`` as float arrays."""
    N = np.zeros((len(basis), n_free))
    for i, row in enumerate(basis):
        for j, v in row.items():
            N[i, j] = float(v)
    return N, np.array([float(c) for c in origin])


def _offsets(variables) -> dict:
    out, at = {}, 0
    for v in variables:
        out[v.name] = at
        at += v.size
    return out


def _kinds(query: Query, atom: Atom, variables: dict | None = None) -> set:
    variables = query.variables if variables is None else variables
    return {"input" if variables[t.variable].kind == "input" else "other" for t in atom.terms}


def _check_ports(query: Query, net: QueryNetwork, path: Path) -> None:
    """The declarations of ``net`` against its model's inputs and outputs (by position)."""
    from polytrav.model.loaders.onnx import onnx_signature

    ins, outs = onnx_signature(path)
    real = is_real_query(query)
    for what, declared, ports in (("input", net.inputs, ins), ("output", net.outputs, outs)):
        if len(declared) != len(ports):
            raise query.error(declared[0] if declared else None,
                              f"network {net.name!r} declares {len(declared)} {what}s but "
                              f"{path.name} has {len(ports)} ({', '.join(p.name for p in ports)})"
                              f"; the declarations must match the model's {what}s in order")
        for v, port in zip(declared, ports):
            size = int(np.prod([d or 1 for d in port.shape]))
            if size != v.size:
                raise query.error(v, f"{what} {v.name!r} of network {net.name!r} has shape "
                                     f"{list(v.shape)} ({v.size} elements) but {path.name}'s "
                                     f"{what} {port.name!r} has shape "
                                     f"{[d if d else '?' for d in port.shape]} ({size})")
            if not real and v.element_type != port.element_type:
                raise query.error(v, f"{what} {v.name!r} of network {net.name!r} is declared "
                                     f"{v.element_type} but {path.name}'s {what} {port.name!r} "
                                     f"is {port.element_type}; declare the model's type, or "
                                     "write the query in real throughout")


def _eliminate(query: Query, x_at: dict, n_x: int):
    """Solve the input equalities shared by every disjunct: ``x = x0 + N z`` exactly.

    Returns ``(x0, N, free, used)``: Fractions, ``N`` as sparse rows (one per input element,
    ``{position among the free elements: coefficient}``), the free elements' indices and the
    eliminated atoms.
    """
    shared = set.intersection(*(set(c) for c in query.clauses)) if query.clauses else set()
    rows, used = [], set()
    for k in sorted(shared):
        atom = query.atoms[k]
        if atom.op == "==" and len(atom.terms) > 1 and _kinds(query, atom) == {"input"}:
            row = {"c": atom.constant}
            for t in atom.terms:
                j = x_at[t.variable] + t.flat
                row[j] = row.get(j, Fraction(0)) + t.coefficient
            rows.append({j: v for j, v in row.items() if v})
            used.add(k)
    for k, clause in enumerate(query.clauses):
        for i in clause:
            atom = query.atoms[i]
            if i not in used and atom.op == "==" and len(atom.terms) > 1 \
                    and _kinds(query, atom) == {"input"}:
                raise query.error(atom, f"the equality {atom} between inputs holds in only "
                                        "some disjuncts of the assertions; polytrav eliminates "
                                        "equalities between inputs that every disjunct states")
    pivots: dict = {}  # eliminated element -> its reduced row {element: coef, "c": constant}
    for row in rows:
        for p, r in pivots.items():
            if row.get(p):
                row = _combine(row, r, -row[p] / r[p])
        col = max((j for j, v in row.items() if j != "c" and v), default=None)
        if col is None:
            if row.get("c"):
                raise query.error(None, "the equalities between inputs contradict each other, "
                                        "so the input region is empty", RegionError)
            continue
        row = {j: v / row[col] for j, v in row.items()}
        for p in pivots:
            if pivots[p].get(col):
                pivots[p] = _combine(pivots[p], row, -pivots[p][col])
        pivots[col] = row
    free = [i for i in range(n_x) if i not in pivots]
    at = {i: j for j, i in enumerate(free)}
    origin, basis = [], []
    for i in range(n_x):
        if i in pivots:
            r = pivots[i]
            origin.append(r.get("c", Fraction(0)))
            basis.append({at[j]: -v for j, v in r.items() if j not in ("c", i) and v})
        else:
            origin.append(Fraction(0))
            basis.append({at[i]: Fraction(1)})
    return origin, basis, free, used


def _combine(row: dict, other: dict, factor: Fraction) -> dict:
    """``row + factor * other`` (sparse rows), zeros dropped."""
    out = dict(row)
    for j, v in other.items():
        out[j] = out.get(j, Fraction(0)) + factor * v
    return {j: v for j, v in out.items() if v}


def _region(query, atoms, x_at, origin, basis, free, unbounded):
    """``(lower, upper, A, b)`` over the free elements, or None if the atoms cannot hold."""
    n = len(free)
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    rows, rhs = [], []
    for atom in atoms:
        a: dict = {}
        c = atom.constant
        for t in atom.terms:
            i = x_at[t.variable] + t.flat
            c -= t.coefficient * origin[i]
            for j, coef in basis[i].items():
                a[j] = a.get(j, Fraction(0)) + t.coefficient * coef
        nonzero = sorted(j for j, v in a.items() if v)
        if not nonzero:
            if not _HOLDS[atom.op](0, c):
                return None
            continue
        for sign in _SIGNS[atom.op]:
            if len(nonzero) == 1:
                j = nonzero[0]
                bound = float(c / a[j])
                if (sign * a[j]) > 0:
                    upper[j] = min(upper[j], bound)
                else:
                    lower[j] = max(lower[j], bound)
            else:
                row = np.zeros(n)
                row[nonzero] = [float(sign * a[j]) for j in nonzero]
                rows.append(row)
                rhs.append(float(sign * c))
    A = np.array(rows) if rows else None
    b = np.array(rhs) if rows else None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        lower, upper = _bounded(query, lower, upper, A, b, free, x_at, unbounded)
    if np.any(lower > upper) or (A is not None and _centre(lower, upper, A, b) is None):
        return None
    return lower + 0.0, upper + 0.0, A, b


def _centre(lower, upper, A, b):
    """The Chebyshev centre of ``{lower <= z <= upper, A z <= b}`` by HiGHS, or None when
    HiGHS proves the set empty (any other failure keeps the set: never read as empty)."""
    from scipy.optimize import linprog

    n = len(lower)
    A = np.zeros((0, n)) if A is None else A
    b = np.zeros(0) if b is None else b
    eye = np.eye(n)
    rows = np.vstack([A, eye, -eye])
    rhs = np.concatenate([b, upper, -lower])
    norms = np.linalg.norm(rows, axis=1)
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=np.hstack([rows, norms[:, None]]), b_ub=rhs,
                  bounds=[(None, None)] * n + [(0, None)], method="highs")
    if res.status == 2:
        return None
    return res.x[:n] if res.status == 0 else (lower + upper) / 2


def _bounded(query, lower, upper, A, b, free, x_at, unbounded):
    """Bounds by LP for elements bounded only through general rows; an element unbounded
    on a side gets ``±`` :func:`_search_radius` there and its name is added to
    ``unbounded`` (a counterexample may be found in the box, a proof is not possible)."""
    from scipy.optimize import linprog

    names = {}
    for v in [v for n in query.networks for v in n.inputs]:
        for k in range(v.size):
            names[x_at[v.name] + k] = v.element(tuple(int(i) for i in np.unravel_index(
                k, v.shape))) if v.shape else v.name
    lower, upper = lower.copy(), upper.copy()
    radius = _search_radius(query)
    for j in np.flatnonzero(~(np.isfinite(lower) & np.isfinite(upper))):
        for sense, arr in ((1.0, lower), (-1.0, upper)):
            if np.isfinite(arr[j]):
                continue
            cost = np.zeros(len(lower))
            cost[j] = sense
            res = linprog(cost, A_ub=A, b_ub=b, bounds=list(zip(
                np.where(np.isfinite(lower), lower, None), np.where(np.isfinite(upper), upper,
                                                                     None))), method="highs")
            if res.status == 0:
                arr[j] = res.x[j]
            else:
                arr[j] = -sense * radius
                if names[free[j]] not in unbounded:
                    unbounded.append(names[free[j]])
    return lower, upper


def _search_radius(query: Query) -> float:
    """The half-width searched on an unbounded input: :data:`SEARCH_SCALE` times the largest
    constant of the query (at least 1)."""
    return SEARCH_SCALE * max([1.0] + [abs(a.constant_float) for a in query.atoms])


def _unsafe(query, atoms, y_at, n_out):
    C, d = [], []
    for atom in atoms:
        row = np.zeros(n_out)
        for t in atom.terms:
            row[y_at[t.variable] + t.flat] += t.coefficient_float
        for sign in _SIGNS[atom.op]:
            C.append(sign * row)
            d.append(sign * atom.constant_float)
    return np.array(C) + 0.0, np.array(d) + 0.0


def _key(*arrays) -> tuple:
    return tuple(None if a is None else (np.shape(a), np.asarray(a, float).tobytes())
                 for a in arrays)


# ----------------------------------------------------------------------------- checking


def _holds(atom: Atom, values: dict) -> bool:
    total = sum((t.coefficient * values[t.variable][t.flat] for t in atom.terms), Fraction(0))
    return _HOLDS[atom.op](total, atom.constant)


def _as_fraction(value) -> Fraction:
    """The exact value an element prints as (a float prints as its shortest repr)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (bool, np.bool_)):
        return Fraction(int(value))
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    return Fraction(repr(float(value)))


def _input_dtypes(instance: Instance) -> list:
    """Per input element, the numpy type its model reads it in."""
    from polytrav.model.loaders.onnx import onnx_signature

    out = []
    for net in instance.query.networks:
        ins, _ = onnx_signature(instance.models[net.name])
        for v, port in zip(net.inputs, ins):
            out += [np.float64 if port.element_type == "float64" else np.float32] * v.size
    return out


def _rounded(value: float, dtype, lo: Fraction | None, hi: Fraction | None) -> float:
    """``value`` in ``dtype``, moved inside ``[lo, hi]`` (exact bounds) by whole ulps."""
    v = dtype(value)
    for _ in range(4):
        if lo is not None and Fraction(float(v)) < lo:
            v = np.nextafter(v, dtype(np.inf))
        elif hi is not None and Fraction(float(v)) > hi:
            v = np.nextafter(v, dtype(-np.inf))
        else:
            break
    return float(v)


_SESSIONS: dict = {}


def _run_onnx(path: str, inputs: list, hidden: list) -> list:
    """onnxruntime's outputs, then the ``hidden`` tensors, of the model at ``inputs`` (one
    flat value list per graph input, cast to the input's type)."""
    import onnxruntime as ort

    from polytrav.model.loaders.onnx_file import message_class, read_model

    stat = os.stat(path)  # a model rewritten in place gets a new session
    key = (path, stat.st_mtime_ns, stat.st_size, tuple(hidden))
    if key not in _SESSIONS:
        model = read_model(path)
        for name in hidden:
            model.graph.output.append(message_class("ValueInfoProto")(name=name))
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        _SESSIONS[key] = ort.InferenceSession(model.SerializeToString(), options,
                                              providers=["CPUExecutionProvider"])
    session = _SESSIONS[key]
    feed = {}
    for spec, values in zip(session.get_inputs(), inputs):
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
        dtype = np.float64 if "double" in spec.type else np.float32
        feed[spec.name] = np.array([float(v) for v in values], dtype=dtype).reshape(shape)
    return [np.asarray(y) for y in session.run(None, feed)]

