"""Put on PYTHONPATH by `migrate record`: loads the recorder into this Python process, then
runs the sitecustomize this folder hides (if any), as Python would have."""

import sys


def _start() -> None:
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import _migrate_recorder

        _migrate_recorder.install()
    except Exception:  # the recorder must never change what the program does
        pass
    # Chain to the next sitecustomize on the path, the one this file shadows.
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


if __name__ == "sitecustomize":  # not when imported as migrate.record.boot.sitecustomize
    _start()
