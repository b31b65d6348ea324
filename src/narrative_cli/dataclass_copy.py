"""``replaced(obj, **changes)``: ``dataclasses.replace`` for the plain dataclasses a turn copies.

``dataclasses.replace`` reads every field through the class's field list and calls
``__init__`` with all of them: for ``PromptInputs`` (40 fields), copied for each agent's
prompt, that was 1.2% of a replayed turn (#17, session seven). For a dataclass whose
``__init__`` only stores its fields (no ``__post_init__``, every field set by ``__init__``, no
``InitVar``, no ``__slots__``), the copy is the instance's field values, in field order, with
``changes`` put over them: the same object ``replace`` makes, made directly. Anything else
(another kind of class, an unknown field name) goes to ``dataclasses.replace``, which also
raises what it raises. Attributes that are not fields (a ``cached_property``'s value) are not
copied, as ``replace`` does not copy them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["replaced"]

T = TypeVar("T")

# Per class: its field names in order, or None when it is not a plain dataclass (see above).
_PLANS: dict[type, tuple[tuple[str, ...], frozenset[str]] | None] = {}


def replaced(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)``, made directly for a plain dataclass."""
    kind = type(obj)
    if kind in _PLANS:
        plan = _PLANS[kind]
    else:
        plan = _PLANS[kind] = _plan(kind)
    if plan is None or not plan[1].issuperset(changes):
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    state = obj.__dict__
    new = object.__new__(kind)
    values = {name: state[name] for name in plan[0]}
    values.update(changes)
    new.__dict__.update(values)
    return new


def _plan(kind: type) -> tuple[tuple[str, ...], frozenset[str]] | None:
    if not dataclasses.is_dataclass(kind) or hasattr(kind, "__post_init__"):
        return None
    if "__slots__" in kind.__dict__ or not hasattr(kind, "__dict__"):
        return None
    fields = dataclasses.fields(kind)
    if len(fields) != len(kind.__dataclass_fields__):  # an InitVar (or a ClassVar) as well
        return None
    if not all(f.init for f in fields):
        return None
    names = tuple(f.name for f in fields)
    return names, frozenset(names)
