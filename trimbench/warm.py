"""``python -m trimbench.warm``: the warm interpreter's launcher (:mod:`trimbench.jobs.warm`), under the
name the README and the Makefile give."""

import sys

from trimbench.jobs.warm import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
