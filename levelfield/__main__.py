"""`python -m levelfield` is the same as the `levelfield` console script."""

from levelfield.cli.main import main

raise SystemExit(main())
