"""`migrate record -- CMD`: run a command once with a recorder loaded into each of its Python
processes, and keep what the run showed about every TorchScript call site (what was
captured, the inputs' structure, the calls of the result, the paths saved and loaded) in
`.migrate/evidence.json` for `scan` and `apply` (docs/evidence.md).

This package never imports torch: the recorder itself (boot/_migrate_recorder.py) runs in
the recorded processes only, and only once the program imports torch.
"""

EVIDENCE_NAME = ".migrate/evidence.json"
SCHEMA_VERSION = 1
