"""Put the repository on sys.path, so scripts import trimbench in envs that do not install it.

Snakemake adds this folder to sys.path for its scripts, as Python does when one runs alone.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
