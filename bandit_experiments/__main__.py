"""``python -m bandit_experiments`` is the ``bandit-gym`` command."""

from __future__ import annotations

import sys

from bandit_experiments.cli import main

sys.exit(main())
