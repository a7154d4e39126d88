"""Stream ids of the agents' counter-based random numbers (see ``bandit_gym._rng``).

Distinct from the envs' streams (1..4), so an agent and an env given the same
seed never draw correlated numbers. Give every new use of randomness its own id.
"""

TIES = 16  # random tie-breaking among maximisers
SAMPLE = 17  # posterior / Langevin noise
EXPLORE = 18  # epsilon-greedy coin flips and random arms
MINIBATCH = 19  # mini-batch indices of stochastic-gradient Langevin steps
