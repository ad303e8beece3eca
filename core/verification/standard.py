"""VNN-LIB 2.0's solver interface (chapter 5) without the command line.

- :data:`CAPABILITIES`: polytrav's answer to each of the eleven mandatory capabilities of
  §5.4, as the lines ``supports`` prints.
- :func:`check_mapping` and :func:`check_soundness`: the error conditions of §5.3.2 (model
  files for exactly the declared networks not ``equal-to`` another; declared types polytrav
  analyses soundly, unless the query is written in ``real`` throughout). The second
  condition, declared types against the models', is checked where the models are read
  (:func:`polytrav.verification.instance.compile_query`).
- :func:`decide`: the result (an :class:`~polytrav.Answer`: ``sat``, ``unsat``, ``unknown`` or
  ``timeout``, which ``polytrav-vnnlib`` prints as the standard's ``timed-out``) and, for
  ``sat``, the assignment of §5.3.1, re-checked by onnxruntime.

The console script ``polytrav-vnnlib`` (:mod:`polytrav.interface.cli.vnnlib_solver`) reads
the command line and prints these.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from polytrav.verification.assignment import INTEGER_TYPES
from polytrav.verification.diff_query import ROUTES, decide_diff, diff_shape
from polytrav.verification.instance import Instance, Witness, compile_query, is_real_query
from polytrav.verification.monotone_query import decide_monotone, monotone_shape
from polytrav.verification.query import Query
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.results import Answer

__all__ = ["CAPABILITIES", "CLAIMED_TYPES", "Decision", "check_mapping", "check_soundness",
           "decide", "needs_instance", "capability_lines"]

#: Element types polytrav claims to analyse soundly (``--onnx-element-types``): ``real``
#: (§3.5), and ``float32``: a ``sat`` assignment is onnxruntime's float32 evaluation, and an
#: ``unsat`` proof covers float32 evaluation (docs: "VNN-LIB 2.0").
CLAIMED_TYPES = ("real", "float32")


def _operators() -> list[str]:
    from polytrav.model.loaders.onnx import SUPPORTED_OPS

    # Cast is read between floating-point types only: its line names the type (§5.4.1)
    return [f"{op} float32" if op == "Cast" else op for op in SUPPORTED_OPS]


#: Capability flag -> the lines ``supports`` prints (a callable for the operator list, which
#: needs the loader).
CAPABILITIES = {
    "--onnx-opset-versions": ["8", "21"],
    "--onnx-element-types": list(CLAIMED_TYPES),
    "--onnx-operators": _operators,
    "--vnnlib-versions": ["1.0", "2.0"],
    "--hidden-node-theories": ["NH", "H"],
    "--multiple-input-output-theories": ["SIO", "MIO"],
    "--multiple-network-theories": ["SNET", "MNET", "MENET", "MINET"],
    "--multiple-node-comparison-theories": ["SNC", "MNC"],
    "--arithmetic-complexity-theories": ["BND", "OUTC", "LIN"],
    "--optimised-disjunctive-reasoning": ["false"],
    "--serialise-assignments": ["false"],
}


def capability_lines(flag: str) -> list[str]:
    """The lines ``supports FLAG`` prints."""
    lines = CAPABILITIES[flag]
    return lines() if callable(lines) else list(lines)


@dataclass(frozen=True)
class Decision:
    """A query's result: ``answer`` (an :class:`~polytrav.Answer`; the standard's word for
    ``TIMEOUT`` is ``timed-out``, which ``polytrav-vnnlib`` prints), the witness for ``sat``,
    why an answer is not a proof, the seconds spent, the traversal's counts (polytopes, LPs)
    and the route that decided it."""

    answer: Answer
    witness: Witness | None
    reason: str
    seconds: float
    polytopes: int = 0
    lps: int = 0
    #: what decided it: ``"stack"`` (:func:`polytrav.verify` on the stacked network),
    #: ``"diff"`` (:func:`polytrav.diff`, a two-network ε query) or ``"monotone"``
    route: str = "stack"
    #: pieces proven by bounds, and the input split's counts (boxes bounded, proven, left
    #: open) where one ran, as :class:`~polytrav.verification.verify.VerificationResult` has
    proven: int = 0
    split: dict | None = None
    #: the certificate written for an ``unsat`` (``decide``'s ``proof``), as
    #: :attr:`VerificationResult.proof <polytrav.verification.verify.VerificationResult.proof>`
    proof: dict | None = None

    def __post_init__(self):
        object.__setattr__(self, "answer", Answer(self.answer))

    def work_line(self) -> str:
        """How the answer was reached, with the counts
        (:func:`polytrav.verification.verify.work_line`)."""
        from polytrav.verification.verify import work_line

        return work_line(self.answer, self.polytopes, self.lps, self.seconds,
                         proven=self.proven, split=self.split)


def needs_instance(query: Query) -> bool:
    """Whether ``query`` needs :func:`decide` (several networks, hidden nodes, or a comparison
    of inputs with outputs) rather than :func:`polytrav.verification.vnnlib.spec_of`."""
    net = query.networks[0]
    inputs = {v.name for v in net.inputs}
    return len(query.networks) > 1 or bool(net.hidden) or any(
        len({t.variable in inputs for t in a.terms}) > 1 for a in query.atoms)


def check_mapping(query: Query, networks: dict, query_name: str) -> dict:
    """§5.3.2 (1): ``networks`` (name -> model file, in command-line order) maps exactly the
    declared networks not declared ``equal-to`` another; returns the mapping with each file
    checked to exist."""
    declared = {n.name: n for n in query.networks}
    for name in networks:
        if name not in declared:
            raise ConfigError(f"--network maps {name!r}, which {query_name} does not declare; "
                              "a model file is supplied for each declared network")
        if declared[name].equal_to is not None:
            raise ConfigError(f"--network maps {name!r}, which {query_name} declares equal to "
                              f"{declared[name].equal_to!r}; an equivalent network is verified "
                              "by verifying the one it copies, so it takes no model file of its "
                              "own")
    for n in query.networks:
        if n.equal_to is None and n.name not in networks:
            raise ConfigError(f"no model file was supplied for network {n.name!r}, which "
                              f"{query_name} declares; give --network {n.name}=<filepath> once "
                              "for each declared network not declared equal to another")
    for name, path in networks.items():
        if Path(path).is_dir():
            raise ConfigError(f"--network {name}={path}: it is a folder; give the network's "
                              ".onnx file")
        if not Path(path).is_file():
            where = "" if Path(path).is_absolute() else f" (relative paths start at {Path.cwd()})"
            raise ConfigError(f"--network {name}={path}: the model file does not exist{where}")
    return dict(networks)


def check_soundness(instance: Instance, query_name: str) -> None:
    """§5.3.2 (3): unless the query is all ``real``, every declared type is one polytrav
    analyses soundly: a :data:`CLAIMED_TYPES` type, or an integer type whose elements the
    model computes as constants (a ``Shape``, say: exact)."""
    query = instance.query
    if is_real_query(query):
        return
    for v in query.variables.values():
        if v.element_type in CLAIMED_TYPES:
            continue
        if v.element_type in INTEGER_TYPES and v.kind != "input" and instance.is_constant(v):
            continue
        raise ConfigError(
            f"{query_name} declares {v.name!r} in network {v.network!r} as {v.element_type}, "
            f"which polytrav does not claim to analyse soundly; it claims "
            f"{', '.join(t for t in CLAIMED_TYPES if t != 'real')} (and integer tensors the "
            "model computes as constants). Rewrite the query to use real throughout to consent "
            "to analysis that may be unsound")


def decide(query: Query, models: dict, *, timeout: float | None = None,
           query_name: str = "the query", solver=None, route: str = "diff",
           proof=None) -> Decision:
    """Decide ``query`` with ``models`` (checked by :func:`check_mapping`) within
    ``timeout`` seconds: the :class:`Decision`.

    ``sat`` only with a witness that holds exactly (:meth:`Instance.witness`); ``unsat`` only
    for a complete proof; ``timeout`` when the time ran out first; else ``unknown``.
    ``solver``: the backends, as :func:`polytrav.analyze` takes them. ``route``: how a
    two-network ε query (:func:`polytrav.verification.diff_query.diff_shape`) is decided:
    ``"diff"`` (default: :func:`polytrav.diff` over the joint partition) or ``"stack"``
    (the stacked network through :func:`polytrav.verify`, as every other query); other
    queries ignore it. ``Decision.route`` says which ran. ``proof``: where to write a
    certificate of an ``unsat`` reached by :func:`polytrav.verify` (the ``stack`` route, a
    query read as real numbers: a float32 query's widened unsafe set is not the file's);
    ``Decision.proof`` says what was written (docs/proofs.md).
    """
    from polytrav.verification.verify import verify

    if route not in ROUTES:
        raise ConfigError(f"decide: route must be one of {', '.join(map(repr, ROUTES))}, got "
                          f"{route!r}")
    t0 = time.perf_counter()
    instance = compile_query(query, models)
    check_soundness(instance, query_name)
    found: list[Witness] = []
    missed: list[Witness] = []

    def confirm(x):
        w = instance.witness(x)
        if w.holds:
            found.append(w)
            return None
        missed.append(w)
        return w.why

    for z in instance.inner_points():  # disjuncts that any input of their region satisfies
        if confirm(z) is None:
            return Decision("sat", found[-1], "", time.perf_counter() - t0)
    if instance.everywhere:
        return Decision("unknown", None, "a disjunct that constrains no output has inputs, but "
                        "no point of its region was confirmed", time.perf_counter() - t0)
    left = None if timeout is None else timeout - (time.perf_counter() - t0)
    if left is not None and left <= 0:
        return Decision(Answer.TIMEOUT, None, "no time left after reading the models",
                        time.perf_counter() - t0)
    real = is_real_query(query)
    shape = monotone_shape(instance)
    if shape is not None:
        answer, reason, polytopes = decide_monotone(instance, shape, left, confirm, solver)
        if answer == "unsat" and not real:
            answer, reason = "unknown", ("the network is monotone in exact arithmetic, but "
                                         "float32 rounding can break a strict comparison by "
                                         "an ulp; write the query in real to ask about the "
                                         "exact function")
        return Decision(answer, found[-1] if answer == "sat" else None, reason,
                        time.perf_counter() - t0, polytopes, route="monotone")
    shape = diff_shape(instance) if route == "diff" else None
    if shape is not None:
        answer, reason, polytopes, lps, split = decide_diff(instance, shape, left, confirm,
                                                            real=real, solver=solver)
        return Decision(answer, found[-1] if answer == "sat" else None, reason,
                        time.perf_counter() - t0, polytopes, lps, route="diff", split=split)
    # a proof for float32 holds with the unsafe set widened by the rounding bound
    spec = instance.spec if real else instance.widened()
    result = verify(instance.network, spec, timeout=left, confirm=confirm, solver=solver,
                    proof=proof if real else None)
    if result.answer is Answer.UNKNOWN and missed and instance.spec.cases:
        # a witness on the boundary of the unsafe set (a strict comparison met with equality,
        # or missed by float32 rounding): search again strictly inside it
        left = None if timeout is None else timeout - (time.perf_counter() - t0)
        if left is None or left > 0:
            inside = verify(instance.network, instance.tightened(), timeout=left, solver=solver,
                            confirm=confirm)
            if inside.answer is Answer.SAT:
                result = inside
    answer = result.answer
    counts = (result.polytopes, result.lps)
    how = {"proven": result.proven, "split": result.split}
    if answer == "unsat" and instance.unbounded:
        return Decision("unknown", None, f"no counterexample with the unbounded inputs "
                        f"{', '.join(instance.unbounded)} in a box; a proof needs them bounded",
                        time.perf_counter() - t0, *counts, **how)
    return Decision(answer, found[-1] if answer == "sat" else None, result.reason,
                    time.perf_counter() - t0, *counts, **how,
                    proof=result.proof if answer == "unsat" else None)
