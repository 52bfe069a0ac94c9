"""Entry point: ``python -m advisor``."""

import sys

from advisor.cli import main

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
