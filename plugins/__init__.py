"""The built-in analysis plugins, one module per property family.

Each module registers its classes through ``polytrav_add_analyses`` (as a third-party plugin
would); the classes are also importable from here and from ``polytrav``::

    from polytrav.plugins import Counterfactual, OutputRange
"""
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.local_model import LocalModel
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.output_range import OutputRange
from polytrav.plugins.region_stats import RegionStats

__all__ = ["OutputRange", "SoftmaxAttack", "Counterfactual", "Monotonicity", "LinearProperty",
           "RegionStats", "LocalModel"]
