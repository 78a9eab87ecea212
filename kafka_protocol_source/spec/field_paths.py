"""Where in a resolved message the fields of one kind are, as a tree of field names.

``field_paths(struct, wanted)`` gives, for the fields ``wanted`` picks (records fields, error
codes, ...), a tree: field name -> None (a wanted field) or the tree below it (a struct, or an
array of structs, that holds some). Tagged fields count. Built once per message version by its
users, so a body is walked only where such fields can be.
"""

from __future__ import annotations

from collections.abc import Callable

from .ir import Field, Struct

# field name -> None (a wanted field) or the tree below it
FieldPaths = dict


def field_paths(struct: Struct, wanted: Callable[[Field], bool]) -> FieldPaths:
    tree: FieldPaths = {}
    for field in struct.fields + struct.tagged:
        if wanted(field):
            tree[field.name] = None
            continue
        below = field.struct if field.kind == "struct" else field.element if field.kind == "array" else None
        if isinstance(below, Struct):
            inner = field_paths(below, wanted)
            if inner:
                tree[field.name] = inner
    return tree
