"""When the garbage collector comes back on after start-up.

``cli/entry.py`` turns the collector off before anything is imported: start-up makes tens of
thousands of objects that live as long as the process and frees almost no reference cycles, so
passes over them are wasted. Most commands turn it back on as soon as the command line is
parsed (``app.root``). The story commands (``run``, ``replay``) import the pipeline only then,
in their own bodies: another 200 modules and their classes, where the collector ran some 50
passes for nothing (about 4% of that import, measured in session nine, issue #17). So they call
``collector_on`` themselves, once those imports are done.
"""

from __future__ import annotations

import gc


def collector_on() -> None:
    """Turn the collector back on if the entry point turned it off, freezing what exists now
    (``gc.freeze``: later passes skip it; it lives as long as the process)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
