"""The ``canary`` command (:mod:`canary.cli.main` builds it from the command modules)."""

import gc


def run() -> None:
    """The console script. Its imports build objects that live until the process ends, so the
    collector is paused while they run and then freezes them (the pattern gc.freeze documents):
    it never walks them again, in a collection or when the interpreter exits."""
    gc.disable()
    from canary.cli.main import main

    gc.freeze()
    gc.enable()
    main()
