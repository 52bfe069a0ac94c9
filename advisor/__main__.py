"""Entry point: ``python -m advisor``."""

import os
import sys

from advisor.cli import main

if __name__ == "__main__":
    try:
        code = main()
        if sys.stdout is not None:  # None: started with stdout closed (`>&-`)
            sys.stdout.flush()
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # output piped into `head`: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    sys.exit(code)
