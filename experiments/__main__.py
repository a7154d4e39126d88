"""``python -m experiments`` is the ``bandit-gym`` command."""

from __future__ import annotations

import sys

from experiments.cli import main

sys.exit(main())
