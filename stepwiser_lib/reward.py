"""``from stepwiser_lib.reward import StepwiserReward``: a trained stepwise judge as a TRL reward
function (:mod:`stepwiser_lib.method.reward`); ``stepwiser_lib.reward.stepwiser_reward`` is its
dotted path for ``trl grpo --reward_funcs``."""

from .method.reward import (  # noqa: F401 (the public names)
    AGGREGATES,
    ENV,
    StepwiserReward,
    aggregate,
    rank_device,
    reward_from_env,
    stepwiser_reward,
)
