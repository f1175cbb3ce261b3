"""``python -m gateway.cli``: the ``ecgw`` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
