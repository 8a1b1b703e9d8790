"""``python -m opar_sim.cli``: the same as the ``opar-sim`` command."""

import sys

from opar_sim.cli.main import main

sys.exit(main())
