"""``monotonicity_table()``: every feature's monotonicity over a box, in one call.

Per feature, the registered ``monotonicity`` analysis runs twice on the domain with
``stop_at_first=True`` (a proof or a confirmed pair, see docs/analyses.md): once for
``"increasing"``, once for ``"decreasing"``. The two answers make the row's verdict:

=================  ==================  ===================
increasing run     decreasing run      verdict
=================  ==================  ===================
holds              holds               ``constant``
holds              violated / unknown  ``increasing``
violated / unknown holds               ``decreasing``
violated           violated            ``neither``
anything else                          ``unknown``
=================  ==================  ===================

Both runs share one :class:`~polytrav.host.runner.RunSession` (plugins and backends built
once), and each has the budgets given (``time_limit`` seconds, ``max_polytopes``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from polytrav.host.options import RunOptions
from polytrav.host.runner import RunSession
from polytrav.model.network import Network
from polytrav.model.region import Box
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.results import Verdict

__all__ = ["Monotone", "MonotonicityRow", "MonotonicityTable", "monotonicity_table"]


class Monotone(str, enum.Enum):
    """A feature's row verdict (the module doc's table)."""

    INCREASING = "increasing"  #: proven non-decreasing, not constant
    DECREASING = "decreasing"  #: proven non-increasing, not constant
    CONSTANT = "constant"  #: proven both: the output does not move with the feature
    NEITHER = "neither"  #: a confirmed pair against each direction
    UNKNOWN = "unknown"  #: anything else (a budget, an unconfirmed pair, an error)

    def __str__(self) -> str:
        return self.value

#: Seconds of each run (one feature, one direction) unless ``time_limit`` says otherwise.
RUN_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class MonotonicityRow:
    """One feature's answer: ``verdict`` (a :class:`Monotone`), each direction's run's
    ``increasing`` and ``decreasing`` (a :class:`~polytrav.Verdict`: HOLDS, VIOLATED or
    UNKNOWN), ``why`` (what an unknown run lacked), and the confirmed pairs
    in the inputs' own units: ``down`` (against increasing: the output falls as the feature
    rises) and ``up`` (against decreasing), each ``(value, value', output, output')`` of the
    feature's two values and the output at both points (every other input equal), or None."""

    feature: int
    name: str
    verdict: Monotone
    increasing: Verdict
    decreasing: Verdict
    down: tuple | None
    up: tuple | None
    why: str | None
    polytopes: int
    seconds: float


class MonotonicityTable:
    """The rows of :func:`monotonicity_table`, in the order of the features asked."""

    def __init__(self, rows, output: int, output_name: str):
        self.rows, self.output, self.output_name = rows, output, output_name

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key) -> MonotonicityRow:
        if isinstance(key, str):
            return next(r for r in self.rows if r.name == key)
        return self.rows[key]

    def __repr__(self) -> str:
        return f"<MonotonicityTable {len(self.rows)} features of {self.output_name}>"

    def to_pandas(self):
        """One row per feature (index: its name): ``verdict``, ``increasing`` and
        ``decreasing`` (each run's verdict), the pairs' columns ``down.value``,
        ``down.value_2``, ``down.output``, ``down.output_2`` (and ``up.``...), ``why``,
        ``polytopes``, ``seconds``."""
        import pandas as pd

        records = []
        for r in self.rows:
            rec = {"feature": r.name, "verdict": r.verdict.value,
                   "increasing": r.increasing.value, "decreasing": r.decreasing.value}
            for side, pair in (("down", r.down), ("up", r.up)):
                values = pair if pair is not None else (np.nan,) * 4
                rec.update(zip((f"{side}.value", f"{side}.value_2", f"{side}.output",
                                f"{side}.output_2"), values))
            rec.update(why=r.why, polytopes=r.polytopes, seconds=r.seconds)
            records.append(rec)
        return pd.DataFrame.from_records(records, index="feature")


def monotonicity_table(net: Network, domain, *, features=None, output=None, solver=None,
                       time_limit: float | None = RUN_TIME_LIMIT,
                       max_polytopes: int | None = None, **options) -> MonotonicityTable:
    """Is ``output`` increasing, decreasing, constant or neither in each feature over a box?

    Parameters
    ----------
    net : Network
    domain : Box or (lo, hi)
        The box (scalars broadcast).
    features : list of int or str, optional
        Input indices or names (``input_names``, else ``x<j>``). Default: every input.
    output : int or class label, optional
        The output: an index, or a class label of the network's ``classes`` (the logit of
        that class). Default: the only output (a binary classifier's logit); a network of
        several outputs needs it.
    solver : optional
        As in :func:`polytrav.analyze`.
    time_limit : float or None
        Seconds of each run (a feature in one direction; default :data:`RUN_TIME_LIMIT`).
    max_polytopes : int, optional
        Polytopes of each run (a count: the same on any machine).
    **options
        More parameters of the ``monotonicity`` analysis (``split``, ``milp``, ``meet``).

    Returns
    -------
    MonotonicityTable
        One :class:`MonotonicityRow` per feature; ``to_pandas()``. A verdict other than
        ``unknown`` is exact: ``increasing``/``decreasing``/``constant`` proven over the
        whole box, ``neither`` with a confirmed pair each way.

    Examples
    --------
    >>> net = Network.from_arrays([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]],
    ...                           input_names=["a", "b"])
    >>> t = monotonicity_table(net, (-1.0, 1.0))
    >>> [(r.name, r.verdict.value) for r in t.rows]
    [('a', 'neither'), ('b', 'constant')]
    >>> value, value_2, out, out_2 = t["a"].down
    >>> bool(value < value_2 and out > out_2)
    True
    """
    if not isinstance(net, Network):
        raise ConfigError(f"monotonicity_table: net must be a polytrav.Network, got "
                          f"{type(net).__name__}")
    box = domain.with_dims(net.n_inputs) if isinstance(domain, Box) else Box(*domain).with_dims(
        net.n_inputs)
    names = list(net.input_names or [f"x{j}" for j in range(net.n_inputs)])
    idx = list(range(net.n_inputs)) if features is None else [_index(f, names) for f in features]
    output = _output_index(net, output)
    unknown = set(options) - {"split", "milp", "meet", "bounds"}
    if unknown:
        raise ConfigError(f"monotonicity_table: unknown option(s) {sorted(unknown)}; known: "
                          "split, milp, meet, bounds")
    session = RunSession(solver)
    run = RunOptions(solver=solver, time_limit=time_limit, max_polytopes=max_polytopes)
    rows = [_row(session, net, box, j, names[j], output, run, options) for j in idx]
    return MonotonicityTable(rows, output, _output_name(net, output))


def _row(session, net, box, j, name, output, run, options) -> MonotonicityRow:
    answers = {}
    polytopes, seconds = 0, 0.0
    for direction in ("increasing", "decreasing"):
        analysis = session.analyses([("monotonicity", {
            "feature": j, "direction": direction, "output": output, "stop_at_first": True,
            **options})])
        try:
            report = session.run(net, box, analysis, run)
        except Exception as exc:  # noqa: BLE001  (this direction is unknown; the rest go on)
            answers[direction] = (Verdict.UNKNOWN, None,
                                  f"{direction}: {type(exc).__name__}: {exc}")
            continue
        result = report.results[0]
        polytopes += result.n_polytopes
        seconds += report.time
        answers[direction] = _answer(direction, result, report)
    (inc, down, why_inc), (dec, up, why_dec) = answers["increasing"], answers["decreasing"]
    if inc is Verdict.HOLDS and dec is Verdict.HOLDS:
        verdict = Monotone.CONSTANT
    elif inc is Verdict.HOLDS:
        verdict = Monotone.INCREASING
    elif dec is Verdict.HOLDS:
        verdict = Monotone.DECREASING
    elif inc is dec is Verdict.VIOLATED:
        verdict = Monotone.NEITHER
    else:
        verdict = Monotone.UNKNOWN
    why = ("; ".join(w for w in (why_inc, why_dec) if w) if verdict is Monotone.UNKNOWN
           else None)
    return MonotonicityRow(j, name, verdict, inc, dec, down, up, why, polytopes, seconds)


def _answer(direction, result, report) -> tuple[Verdict, tuple | None, str | None]:
    """(HOLDS, VIOLATED with its confirmed pair, or UNKNOWN; the pair; why unknown)."""
    if result.verdict is Verdict.HOLDS:
        return Verdict.HOLDS, None, None
    pair = result.details.get("witness_pair")
    if result.verdict is Verdict.VIOLATED and pair is not None:
        j = result.details["feature"]
        y, y2 = result.details["pair_outputs"]
        return Verdict.VIOLATED, (float(pair[0][j]), float(pair[1][j]), y, y2), None
    if result.verdict is Verdict.VIOLATED_UNCONFIRMED:
        return (Verdict.UNKNOWN, None,
                f"{direction}: a violating polytope whose pair a forward pass did not confirm")
    reasons = [f"run ended {report.status}"]
    if result.failures:
        reasons.append(f"{len(result.failures)} failed solve(s): {result.failures[0]}")
    return Verdict.UNKNOWN, None, f"{direction}: " + ", ".join(reasons)


def _index(feature, names) -> int:
    if isinstance(feature, str) and feature in names:
        return names.index(feature)
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool) \
            and 0 <= feature < len(names):
        return int(feature)
    raise ConfigError(f"monotonicity_table: unknown feature {feature!r}; features: {names[:10]}")


def _output_index(net, output) -> int:
    m = net.n_outputs
    if output is None:
        if m == 1:
            return 0
        raise ConfigError(f"monotonicity_table: the network has {m} outputs; say which with "
                          "output= (an index, or a class label)")
    if isinstance(output, (int, np.integer)) and not isinstance(output, bool):
        if 0 <= output < m:
            return int(output)
    elif m > 1 and net.classes is not None and output in list(net.classes):
        return list(net.classes).index(output)
    raise ConfigError(f"monotonicity_table: output must be an index in [0, {m})"
                      + (f" or a class label of {list(net.classes)}" if m > 1 and net.classes
                         is not None else "") + f", got {output!r}")


def _output_name(net, output) -> str:
    if net.n_outputs > 1 and net.classes is not None and len(net.classes) == net.n_outputs:
        return f"logit of {net.classes[output]}"
    return f"output {output}"
