"""``python -m trimbench.config [FILE ...]``: check config files as a run reads them."""

from trimbench.config.prepare import main

raise SystemExit(main())
