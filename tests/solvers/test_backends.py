"""LP backends: normalised statuses and agreement on small problems with known answers."""
import numpy as np
import pytest

from polytrav import ConfigError, Status, available_solvers
from polytrav.host.manager import get_solver

LP_SOLVERS = available_solvers("lp")


@pytest.mark.parametrize("name", LP_SOLVERS)
def test_known_lps(name):
    s = get_solver(name)
    # min -x - y  s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0  -> optimum at (1.6, 1.2)
    res = s.solve_lp([-1.0, -1.0], [[1, 2], [3, 1]], [4, 6], bounds=(np.zeros(2), np.full(2, np.inf)))
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(-2.8)
    np.testing.assert_allclose(res.x, [1.6, 1.2], atol=1e-8)
    res = s.solve_lp([1.0], [[1.0], [-1.0]], [-1.0, -1.0])  # x <= -1 and x >= 1
    assert res.status is Status.INFEASIBLE and res.x is None
    res = s.solve_lp([-1.0], [[-1.0]], [0.0])  # max x, x >= 0
    assert res.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)
    res = s.solve_lp([1.0, 1.0], None, None, A_eq=[[1.0, -1.0]], b_eq=[2.0],
                     bounds=(np.zeros(2), np.full(2, 10.0)))
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(2.0)


def test_rejected_option_is_named():
    with pytest.raises(ConfigError, match="rejected option no_such_option"):
        get_solver("highs", options={"no_such_option": 1}).solve_lp([1.0], [[1.0]], [1.0])


def test_registry_lists_builtins_in_preference_order():
    assert LP_SOLVERS[:2] == ["highs", "scipy"]


def test_chebyshev_model_calls_its_public_backend_hooks():
    """The backend extension API of ChebyshevModel: each row change calls its ``sync_*`` hook
    (and a subclass still overriding an old private name is warned and still called)."""
    from polytrav import Box
    from polytrav.extend import ChebyshevModel
    from polytrav.model.geometry import build_frame

    calls = []

    class Recording(ChebyshevModel):
        def sync_push(self, block):
            calls.append(("push", len(self.blocks), block[0].shape))

        def sync_pop(self, block):
            calls.append(("pop", len(self.blocks), block is self.blocks[-1]))

        def sync_signs(self, level, rows):
            calls.append(("signs", level, list(rows)))

        def sync_region_rows(self, A, b):
            calls.append(("region", A.shape, self.region_A.shape[0]))

    model = Recording(get_solver("highs"), build_frame(Box([-1.0, -1.0], [1.0, 1.0]), 2))
    model.push(np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros(2), np.array([True, True]))
    model.set_signs(np.array([True, False]))
    model.set_signs(np.array([True, False]))  # nothing changed: no call
    model.add_region_rows(np.array([[0.6, 0.8]]), np.array([0.5]))
    model.pop()
    assert calls == [("push", 1, (2, 2)), ("signs", 0, [1]), ("region", (1, 2), 1),
                     ("pop", 1, True)]

    with pytest.warns(DeprecationWarning, match="_sync_push is deprecated.*sync_push"):
        class Old(ChebyshevModel):
            def _sync_push(self, block):
                calls.append("old push")

    old = Old(get_solver("highs"), build_frame(Box([-1.0, -1.0], [1.0, 1.0]), 2))
    old.push(np.array([[1.0, 0.0]]), np.zeros(1), np.array([True]))
    assert calls[-1] == "old push"
