"""Contract checks a plugin author runs in their own tests (like scikit-learn's
``check_estimator``): :func:`check_analysis`, :func:`check_backend` and, for an analysis
with a settle stage, :func:`check_settle`.

Each runs every check of the contract and raises one ``AssertionError`` listing the checks
that failed, each with what broke and how to fix it; it returns the names of the checks run.
The built-in analyses and backends, and the example plugin, pass them in polytrav's own
suite. See docs/testing-plugins.md.

>>> from polytrav.testing import check_analysis
>>> check_analysis("output_range")[:3]
['registered', 'parameters', 'validate']
"""
from __future__ import annotations

from collections.abc import Callable

from polytrav.testing.reference import brute_force_cells, brute_force_regions, random_net

__all__ = ["check_analysis", "check_backend", "check_settle", "random_net",
           "brute_force_cells", "brute_force_regions"]


def _run_checks(checks, args: tuple, what: str, skip=()) -> list[str]:
    failed, ran = [], []
    for check in checks:
        name = check.__name__.removeprefix("check_")
        if name in skip:
            continue
        try:
            check(*args)
        except AssertionError as exc:
            failed.append(f"{name}: {exc}")
        except Exception as exc:  # noqa: BLE001  a crash is a failed check, named
            failed.append(f"{name}: raised {type(exc).__name__}: {exc}")
        ran.append(name)
    if failed:
        raise AssertionError(f"{what} fails {len(failed)} of {len(ran)} contract checks:\n- "
                             + "\n- ".join(failed))
    return ran


def check_analysis(analysis, *, params: dict | None = None, n_inputs: int = 2,
                   n_outputs: int = 1, seeds=(0, 1), reference: Callable | None = None,
                   row_options: dict | None = None, registered: bool = True,
                   skip=()) -> list[str]:
    """Check an analysis against the contract of docs/writing-plugins.md.

    Parameters
    ----------
    analysis : str, Analysis subclass or instance
        A registered name, a class (made with ``params``), or an unrun instance (copied for
        each run).
    params : dict, optional
        The parameters the analysis is made with (for a name or a class).
    n_inputs, n_outputs, seeds
        The small random networks it runs on (one per seed, two hidden layers of 5 and 4),
        over the box ``[-1, 1]^n_inputs``; choose sizes its parameters fit.
    reference : callable, optional
        ``reference(net, region, cells) -> {"verdict": ..., "value": ...}``: the answer
        computed independently from every cell of the region (brute force, see
        :func:`brute_force_regions`); the analysis's exact answer must equal it.
    row_options : dict, optional
        Options for :meth:`~polytrav.Analysis.for_row`: with them, each row of
        :func:`polytrav.explain` must answer as ``analyze`` on what ``for_row`` returns.
    registered : bool
        Whether the class must be in the plugin registry (its entry point installed).
    skip : iterable of str
        Names of checks not to run (say why in your test).

    Returns
    -------
    list of str
        The checks run: registered, parameters, validate, runs, reusable, pickles, parts,
        strategies, reference, for_row.
    """
    import copy

    import numpy as np

    from polytrav.host.analysis import Analysis
    from polytrav.host.manager import analysis_classes, create_analysis, get_plugin_manager
    from polytrav.model.region import Box
    from polytrav.testing.analysis_checks import ANALYSIS_CHECKS, Case

    params = dict(params or {})
    if isinstance(analysis, str):
        cls = analysis_classes(get_plugin_manager()).get(analysis)
        if cls is None:
            raise AssertionError(f"no analysis is registered as {analysis!r}")

        def make():
            return create_analysis(analysis, **params)
    elif isinstance(analysis, type) and issubclass(analysis, Analysis):
        cls = analysis

        def make():
            return cls(**params)
    elif isinstance(analysis, Analysis):
        cls = type(analysis)
        params = {k: v for k, v in vars(analysis).items() if not k.startswith("_")}

        def make():
            return copy.deepcopy(analysis)
    else:
        raise TypeError(f"check_analysis takes a registered name, an Analysis subclass or an "
                        f"instance, got {type(analysis).__name__}")
    nets = [random_net(seed, n_inputs, [5, 4], n_outputs) for seed in seeds]
    case = Case(cls, make, nets, Box(-np.ones(n_inputs), np.ones(n_inputs)), registered,
                reference, row_options if registered else None, params)
    return _run_checks(ANALYSIS_CHECKS, (case,), f"analysis {cls.__name__}", skip)


def check_settle(analysis_factory: Callable, *, n_inputs: int = 3, n_outputs: int = 2,
                 hidden=(8, 8, 6), seeds=range(8), **options) -> list[str]:
    """Check an analysis's settle stage (:meth:`~polytrav.Analysis.settle`): on random small
    networks the run with it answers as the full traversal without it (``settle=False``).
    ``analysis_factory(net, region)`` makes a fresh analysis; ``options`` go to both runs.
    Returns the stage's outcome per network (``proven``, ``violated``, ``open``, ``none``).
    See :func:`polytrav.testing.settle_checks.check_settle`."""
    from polytrav.testing.settle_checks import check_settle as check

    return check(analysis_factory, n_inputs=n_inputs, n_outputs=n_outputs, hidden=hidden,
                 seeds=seeds, **options)


def check_backend(backend, *, registered: bool = True, skip=()) -> list[str]:
    """Check a solver backend against the contract of docs/writing-plugins.md: class data,
    registration, availability without imports, known answers and statuses on the problems
    of :mod:`polytrav.testing.problems` for each of its forms, unknown options, its place in
    a fallback chain, and (LP backends) a traversal equal to brute force.

    ``backend``: a registered name or a :class:`~polytrav.SolverBackend` subclass. Returns
    the names of the checks run.
    """
    from polytrav.host.manager import get_plugin_manager, solver_classes
    from polytrav.testing.backend_checks import BACKEND_CHECKS, BackendCase

    if isinstance(backend, str):
        cls = solver_classes(get_plugin_manager()).get(backend)
        if cls is None:
            raise AssertionError(f"no backend is registered as {backend!r}")
    else:
        cls = backend
    return _run_checks(BACKEND_CHECKS, (BackendCase(cls, registered),),
                       f"backend {getattr(cls, 'name', cls)!r}", skip)
