"""``python -m sparsify`` runs the command line."""

from sparsify.cli import main

raise SystemExit(main())
