"""``from stepwiser_lib.reward import StepwiserReward``: a trained stepwise judge as a TRL reward
function (:mod:`stepwiser_lib.method.reward`)."""

from .method.reward import AGGREGATES, StepwiserReward, aggregate  # noqa: F401 (the public names)
