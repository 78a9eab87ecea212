"""Render IR messages as a krammar file that parses back to the same IR.

Layout: each API's request and response (by api key), every shared struct just before the first
message that owns it; then the header and data messages. Writes only facts (the IR has no prose)
and raises ``RenderError`` for anything krammar cannot say, rather than writing it wrongly.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..ir import ALWAYS_NULLABLE, FieldDef, MessageDef, StructDef
from ..versions import NONE
from .words import ALL, NAME, NULLABLE_PRIMITIVES, default_struct_name
from .words import format_versions as _format_versions


class RenderError(ValueError):
    """An IR fact krammar has no spelling for."""


def render_krammar(messages: Iterable[MessageDef], comment: Iterable[str] = ()) -> str:
    messages = list(messages)
    blocks = []
    header = [f"// {line}".rstrip() for line in comment]
    if header:
        blocks.append("\n".join(header))
    for group in _groups(messages):
        blocks += _shared_structs(group)
        blocks += [_message(m, group[0]) for m in group]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _groups(messages: list[MessageDef]) -> list[list[MessageDef]]:
    """[request, response] per api (by key, then name: a renamed api may keep both names), then one
    group per header or data message."""
    requests = sorted((m for m in messages if m.kind == "request"), key=lambda m: (m.api_key, m.name))
    responses = {m.name: m for m in messages if m.kind == "response"}
    groups = []
    for request in requests:
        response = responses.pop(request.name[: -len("Request")] + "Response", None)
        if response is None:
            raise RenderError(f"{request.name} has no response: krammar pairs every request with one")
        groups.append([request, response])
    if responses:
        raise RenderError(f"responses without a request: {sorted(m.name for m in responses.values())}")
    order = {"header": 0, "data": 1}
    others = sorted((m for m in messages if m.kind in order), key=lambda m: (order[m.kind], m.name))
    unknown = [m.name for m in messages if m.kind not in ("request", "response", *order)]
    if unknown:
        raise RenderError(f"unknown message kinds: {unknown}")
    return groups + [[m] for m in others]


def _shared_structs(group: list[MessageDef]) -> list[str]:
    """Each distinct shared struct of the group once, owned by every message that has it."""
    owned: list[tuple[StructDef, list[str]]] = []
    for message in group:
        for struct in message.common_structs:
            if struct.versions != ALL:
                raise RenderError(f"{message.name}.{struct.name}: a shared struct has every version in krammar")
            for existing, owners in owned:
                if existing == struct:
                    owners.append(message.name)
                    break
            else:
                owned.append((struct, [message.name]))
    return [
        _lines(f"{s.name} => not top level, for {' '.join(owners)}", s.fields, s.name)
        for s, owners in _before_use(owned)
    ]


def _before_use(owned: list[tuple[StructDef, list[str]]]) -> list[tuple[StructDef, list[str]]]:
    """Order shared structs so each comes after the shared structs its fields use."""
    names = {s.name for s, _ in owned}
    done: set[int] = set()
    ordered: list[tuple[StructDef, list[str]]] = []

    def uses(fields: tuple[FieldDef, ...]) -> set[str]:
        found = set()
        for f in fields:
            found |= uses(f.fields) if f.fields else ({f.type.name} & names)
        return found

    def visit(i: int, path: tuple[str, ...]) -> None:
        struct, _ = owned[i]
        if i in done:
            return
        if struct.name in path:
            raise RenderError(f"circular shared structs: {' -> '.join((*path, struct.name))}")
        for j, (other, _) in enumerate(owned):
            if other.name in uses(struct.fields) and other.name != struct.name:
                visit(j, (*path, struct.name))
        done.add(i)
        ordered.append(owned[i])

    for i in range(len(owned)):
        visit(i, ())
    return ordered


def _message(message: MessageDef, request: MessageDef) -> str:
    if message.kind == "response":
        same = (message.api_key, message.valid_versions, message.flexible_versions) == (
            request.api_key,
            request.valid_versions,
            request.flexible_versions,
        )
        if not same or message.latest_version_unstable or not message.deprecated_versions.empty or message.listeners:
            raise RenderError(
                f"{message.name} differs from {request.name} in key, versions or flags; "
                "a krammar response takes all of these from its request"
            )
        return _lines(f"{message.name} =>", message.fields, message.name)
    versions = message.valid_versions
    if message.kind != "request" and (
        message.latest_version_unstable or not message.deprecated_versions.empty or message.listeners
    ):
        raise RenderError(f"{message.name}: a {message.kind} struct has no unstable/deprecated/listeners modifiers")
    mods = [f"key {message.api_key}"] if message.kind == "request" else ["not top level", message.kind]
    mods.append(f"max version {versions.high}")
    if versions.low:
        mods.append(f"min version {versions.low}")
    if not message.flexible_versions.empty:
        mods.append(f"flexible {format_versions(message.flexible_versions)}")
    if message.latest_version_unstable:
        mods.append("latest unstable")
    if not message.deprecated_versions.empty:
        mods.append(f"deprecated {format_versions(message.deprecated_versions)}")
    if message.listeners:
        for listener in message.listeners:
            if not listener.isascii() or not listener.isalpha():
                raise RenderError(f"{message.name}: listener {listener!r} is not a word of ASCII letters")
        mods.append("listeners " + " ".join(message.listeners))
    return _lines(f"{message.name} => {', '.join(mods)}", message.fields, message.name)


def _lines(header: str, fields: tuple[FieldDef, ...], parent: str) -> str:
    _name(header.split(" ", 1)[0], "definition name")
    out = [header]
    _fields(fields, parent, 1, out)
    return "\n".join(out)


def _fields(fields: tuple[FieldDef, ...], parent: str, depth: int, out: list[str]) -> None:
    for field in fields:
        _name(field.name, f"field name in {parent}")
        attributes = _attributes(field)
        line = f"{'  ' * depth}{field.name}: {_type(field, parent)}"
        out.append(f"{line} // {attributes}" if attributes else line)
        if field.fields:
            _fields(field.fields, field.type.name, depth + 1, out)


def _type(field: FieldDef, parent: str) -> str:
    t = field.type
    where = f"{parent}.{field.name}"
    if field.length_from is not None:
        if t.name != "bytes" or t.is_array or field.default is not None or not field.nullable_versions.empty:
            raise RenderError(f"{where}: length-field-minus is plain bytes, never null, with no default")
        source, minus = field.length_from
        return f"length-field-minus => {source} - {minus}"
    nullable = field.nullable_versions
    written_nullable = "" if nullable == field.versions else f"-{format_versions(nullable)}"
    if field.fields:
        hint = "" if t.name == default_struct_name(parent, field.name, t.is_array) else t.name
        core = f"=>{hint}" if not t.is_array else f"[=>]{hint}"
    else:
        core = t.name if not t.is_array else f"[{t.name}]"
    if t.is_array:
        if t.varint_count:
            if not nullable.empty:
                raise RenderError(f"{where}: a varint-count array is never nullable in krammar")
            core = "varint" + core
        elif not nullable.empty:
            core = f"nullable{written_nullable}{core}"
    elif t.name in ALWAYS_NULLABLE:
        if nullable != field.versions:
            raise RenderError(f"{where}: {t.name} is nullable in exactly its field's versions")
    elif not nullable.empty:
        if t.is_primitive and t.name not in NULLABLE_PRIMITIVES:
            raise RenderError(f"{where}: {t.name} cannot be null in krammar")
        core = f"nullable{written_nullable}{core}" if field.fields else f"nullable-{core}{written_nullable}"
    if not t.is_primitive:
        _name(t.name, f"{where}: struct name")
    if field.default is not None:
        text = field.default
        if any(c in text for c in "()\t\r\n") or "//" in text or "  " in text or text != text.strip(" "):
            raise RenderError(f"{where}: default {text!r} has no krammar spelling (parentheses, '//', or spacing)")
        core += f"({text})"
    return core


def format_versions(versions) -> str:
    try:
        return _format_versions(versions)
    except ValueError as e:
        raise RenderError(str(e)) from None


def _name(name: str, what: str) -> None:
    if not NAME.fullmatch(name):
        raise RenderError(f"{what} {name!r} is not a krammar name (ASCII letters then letters or digits)")


def _attributes(field: FieldDef) -> str:
    items = []
    if field.versions != ALL:
        if field.versions.empty:
            raise RenderError(f"{field.name}: a field with no versions")
        items.append(format_versions(field.versions))
    if field.tag is not None:
        items.append(f"tag {field.tag}")
        if field.tagged_versions != field.versions:
            items.append(f"tagged {format_versions(field.tagged_versions)}")
    elif field.tagged_versions != NONE:
        raise RenderError(f"{field.name}: tagged versions without a tag")
    if field.flexible_versions is not None:
        items.append(f"flexible {format_versions(field.flexible_versions)}")
    if field.map_key:
        items.append("map key")
    if field.entity_type:
        _name(field.entity_type, f"{field.name}: entity type")
        items.append(f"entity {field.entity_type}")
    if field.ignorable:
        items.append("ignorable")
    if field.zero_copy:
        items.append("zero copy")
    return ", ".join(items)
