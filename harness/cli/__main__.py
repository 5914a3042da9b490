"""``python -m harness.cli``: the ``deskbench`` command, as before the CLI became a package."""
import sys

from harness.cli.main import main

sys.exit(main())
