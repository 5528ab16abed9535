"""``python -m trimbench.resume COMMAND...``: continue a run after snakemake was killed
(:mod:`trimbench.jobs.resume`), under the name the README gives."""

import sys

from trimbench.jobs.resume import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
