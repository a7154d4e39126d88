"""The experiment layer of bandit-gym: runs agents on envs and reports what they did.

It imports ``bandit_gym`` (the envs) and ``agents``; neither imports it. Today it holds
the ``bandit-gym`` command line (:mod:`bandit_experiments.cli`) and the default experiment
(:mod:`bandit_experiments.demo`).
"""

from __future__ import annotations
