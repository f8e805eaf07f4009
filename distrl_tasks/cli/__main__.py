"""``python -m distrl_tasks.cli`` (as ``accelerate launch -m distrl_tasks.cli`` runs it)."""

import sys

from distrl_tasks.cli.main import main

sys.exit(main())
