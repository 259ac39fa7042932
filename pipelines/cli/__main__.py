"""`python -m pipelines.cli`: the same as the `tracereplay` console script."""

import sys

from pipelines.cli import main

sys.exit(main())
