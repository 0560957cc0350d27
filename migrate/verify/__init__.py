"""`migrate verify` and `migrate convert`: prove a migrated artifact gives the TorchScript numbers.

Nothing here imports torch or executorch at import time; the CLI imports
:mod:`migrate.cli.verify_commands`, whose command bodies import the heavy modules
lazily (they live in the ``verify`` extra: ``pip install -e '.[verify]'``, docs/install.md).
"""

from migrate.verify.errors import STAGES, VerifyError

__all__ = ["STAGES", "VerifyError"]
