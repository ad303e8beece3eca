"""The contract of an analysis, as checks a third party runs on its own class.

Each check takes a :class:`Case` (the analysis, how to make a fresh copy, small random
networks, the region) and raises ``AssertionError`` with a message that says what broke and
how to fix it. :func:`polytrav.testing.check_analysis` runs them all.
"""
from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polytrav.host.analysis import Analysis
from polytrav.host.manager import analysis_classes, check_options, create_analysis, get_plugin_manager
from polytrav.host.runner import analyze
from polytrav.model.network import Network
from polytrav.model.region import Box
from polytrav.vocabulary.errors import ConfigError, PolytravError
from polytrav.vocabulary.results import AnalysisResult, Verdict
from polytrav.vocabulary.tolerances import WITNESS_TOL

__all__ = ["Case", "ANALYSIS_CHECKS", "same_answer"]

#: Values of two runs that should agree are equal to this (absolute and relative).
AGREE_TOL = 1e-6


@dataclass
class Case:
    """What the checks of one analysis share."""

    cls: type
    make: Callable[[], Analysis]  # a fresh, unrun copy of the analysis under test
    nets: list[Network]
    region: Box
    registered: bool = True
    reference: Callable | None = None
    row_options: dict | None = None
    params: dict = field(default_factory=dict)
    _runs: dict = field(default_factory=dict, repr=False)

    def run(self, k: int, **options) -> Any:
        """A fresh copy's report on net ``k`` with ``options`` (kept: a run is deterministic)."""
        key = (k, tuple(sorted(options.items(), key=lambda item: item[0])))
        if key not in self._runs:
            self._runs[key] = analyze(self.nets[k], self.region, self.make(), **options)
        return self._runs[key]


def same_answer(a: AnalysisResult, b: AnalysisResult, what: str) -> None:
    """Two results of the same question agree: verdict, exactness, and the value when it is
    exact (a value that is not covers what each run visited, which may differ)."""
    assert a.verdict == b.verdict, f"{what}: verdict {a.verdict} vs {b.verdict}"
    assert a.exact == b.exact, f"{what}: exact {a.exact} vs {b.exact}"
    if a.exact:
        _same_value(a.value, b.value, what)


def _same_value(a, b, what: str) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), f"{what}: value keys {sorted(a)} vs {sorted(b)}"
        for key in a:
            _same_value(a[key], b[key], f"{what}, value[{key!r}]")
        return
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        assert a == b, f"{what}: value {a!r} vs {b!r}"
        return
    try:
        x, y = np.asarray(a, float), np.asarray(b, float)
    except (TypeError, ValueError):
        assert a == b, f"{what}: value {a!r} vs {b!r}"
        return
    assert x.shape == y.shape and np.allclose(x, y, rtol=AGREE_TOL, atol=AGREE_TOL,
                                              equal_nan=True), f"{what}: value {a!r} vs {b!r}"


# ---------------------------------------------------------------- the checks


def check_registered(case: Case) -> None:
    """A unique, non-empty ``name``; found under it in the plugin registry."""
    name = getattr(case.cls, "name", "")
    assert isinstance(name, str) and name, (
        f"{case.cls.__name__}: set the class attribute name (the key users write)")
    if not case.registered:
        return
    found = analysis_classes(get_plugin_manager()).get(name)
    assert found is case.cls, (
        f"analysis {name!r} is not registered (found {found!r}): return the class from a "
        "@hookimpl polytrav_add_analyses() in the module your 'polytrav' entry point names, "
        "and install the package (or pass registered=False while developing)")


def check_parameters(case: Case) -> None:
    """Made by name with its parameters; an unknown parameter is a ConfigError naming it."""
    a = case.make()
    assert isinstance(a, case.cls), f"made {type(a).__name__}, expected {case.cls.__name__}"
    repr(a)
    takes = check_options(case.cls.__init__, dict(case.params), f"analysis {case.cls.name!r}")
    if not case.registered or "polytrav_no_such_parameter" in takes:
        return
    try:
        create_analysis(case.cls.name, **case.params, polytrav_no_such_parameter=1)
    except ConfigError as exc:
        assert "polytrav_no_such_parameter" in str(exc), exc
    else:  # **kwargs: the analysis itself must refuse it
        raise AssertionError(f"analysis {case.cls.name!r} accepted an unknown parameter; "
                             "take parameters by name (no **kwargs) so typos are refused")


def check_validate(case: Case) -> None:
    """On a network of another input size, ``validate`` passes or raises a polytrav error
    naming the analysis (never another exception)."""
    net = case.nets[0]
    d = net.n_inputs + 1
    other = Network.from_arrays([np.ones((2, d)), np.ones((net.n_outputs, 2))],
                                [np.zeros(2), np.zeros(net.n_outputs)])
    try:
        case.make().validate(other, Box(-np.ones(d), np.ones(d)))
    except PolytravError as exc:
        assert case.cls.name in str(exc), (
            f"analysis {case.cls.name!r}: validate's error does not name the analysis: {exc}")
    except Exception as exc:  # noqa: BLE001  the contract: only polytrav errors
        raise AssertionError(f"analysis {case.cls.name!r}: validate raised "
                             f"{type(exc).__name__}: {exc}; raise ConfigError or RegionError "
                             "naming the analysis") from exc


def check_runs(case: Case) -> None:
    """A run returns one AnalysisResult labelled as the analysis, JSON-safe and printable;
    a violation's witness lies in the region."""
    for k in range(len(case.nets)):
        report = case.run(k)
        res = report[0]
        assert isinstance(res, AnalysisResult) and res.analysis == case.cls.name, res
        assert res.verdict is None or isinstance(res.verdict, Verdict), res.verdict
        assert isinstance(res.exact, bool), f"exact must be a bool, got {res.exact!r}"
        json.dumps(res.to_dict())
        str(report)
        if res.verdict is Verdict.VIOLATED:
            assert res.witness is not None and case.region.contains(
                np.asarray(res.witness, float), tol=WITNESS_TOL), (
                f"analysis {case.cls.name!r}: a violation's witness must lie in the region")
        if report.complete and res.verdict is not None:
            assert res.verdict is not Verdict.UNKNOWN or res.failures, (
                f"analysis {case.cls.name!r}: UNKNOWN after a complete run with no failure")


def check_reusable(case: Case) -> None:
    """One instance run twice gives the same result (``begin`` resets the running answer)."""
    a = case.make()
    first = analyze(case.nets[0], case.region, a)[0]
    again = analyze(case.nets[0], case.region, a)[0]
    same_answer(first, again, f"analysis {case.cls.name!r} run twice")


def check_pickles(case: Case) -> None:
    """An unrun instance pickles (runs in parts ship copies to workers) and its copy answers
    the same."""
    copy = pickle.loads(pickle.dumps(case.make()))
    assert isinstance(copy, case.cls)
    same_answer(analyze(case.nets[0], case.region, copy)[0], case.run(0)[0],
          f"analysis {case.cls.name!r} after a pickle round trip")


def check_parts(case: Case) -> None:
    """When ``combine`` is implemented: a run in parts answers as the serial run."""
    if not case.make().combinable:
        return
    from polytrav.parallel import SerialExecutor

    for k in range(len(case.nets)):
        parts = case.run(k, executor=SerialExecutor(), parts=3)[0]
        same_answer(parts, case.run(k)[0], f"analysis {case.cls.name!r} in parts (net {k})")


def check_strategies(case: Case) -> None:
    """The same answer whichever enumeration visits the polytopes (the LP traversal, the
    subdivision, the paper's algorithm as written)."""
    for k in range(len(case.nets)):
        base = case.run(k, strategy="hierarchical")[0]
        for strategy in ("subdivision", "seed-faithful"):
            same_answer(case.run(k, strategy=strategy)[0], base,
                  f"analysis {case.cls.name!r}, {strategy} vs hierarchical (net {k})")


def check_reference(case: Case) -> None:
    """When a reference is given: the answer equals it on every net. ``reference(net, region,
    cells)`` gets every full-dimensional cell by brute force (``{"code", "A", "b", "W",
    "c"}``, ``A x <= b`` the cell in the region, ``W x + c`` the network there) and returns
    ``{"verdict": ..., "value": ...}`` (either key may be left out)."""
    if case.reference is None:
        return
    from polytrav.testing.reference import brute_force_regions

    for k, net in enumerate(case.nets):
        cells = brute_force_regions(net, case.region.lower, case.region.upper)
        expected = case.reference(net, case.region, cells)
        res = case.run(k)[0]
        if "verdict" in expected:
            assert res.verdict == expected["verdict"], (
                f"analysis {case.cls.name!r} (net {k}): verdict {res.verdict}, brute force "
                f"{expected['verdict']}")
        if "value" in expected:
            assert res.exact, f"analysis {case.cls.name!r} (net {k}): not exact: {res.failures}"
            _same_value(res.value, expected["value"],
                        f"analysis {case.cls.name!r} (net {k}) vs brute force")


def check_for_row(case: Case) -> None:
    """When ``for_row`` is implemented: each row of :func:`polytrav.explain` answers as
    ``analyze`` on the (analysis, region) that ``for_row`` returns."""
    if case.row_options is None or case.cls.for_row.__func__ is Analysis.for_row.__func__:
        return
    from polytrav.host.explain import explain_rows
    from polytrav.host.row import Row
    from polytrav.model.scales import DataSummary

    net, box = case.nets[0], case.region
    rng = np.random.default_rng(0)
    X = rng.uniform(box.lower, box.upper, (3, net.n_inputs))
    features = tuple(f"x{j}" for j in range(net.n_inputs))
    rows = list(explain_rows(net, X, [(case.cls.name, dict(case.row_options))], domain=box))
    for i, row in enumerate(rows):
        assert row.ok, f"analysis {case.cls.name!r}, row {i}: {row.errors}"
        analysis, region = case.cls.for_row(Row(X[i], box, features, data=DataSummary.of(X)),
                                            **case.row_options)
        same_answer(row.results[case.cls.name], analyze(net, region, analysis)[0],
              f"analysis {case.cls.name!r}, explain row {i} vs analyze")


#: Every check, in the order :func:`polytrav.testing.check_analysis` runs them.
ANALYSIS_CHECKS = (check_registered, check_parameters, check_validate, check_runs,
                   check_reusable, check_pickles, check_parts, check_strategies,
                   check_reference, check_for_row)
