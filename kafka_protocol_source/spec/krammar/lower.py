"""Lower a krammar syntax tree into the IR the JSON front-end produces (``spec.ir``).

Requests and responses become request/response ``MessageDef``s (a response takes its request's
key, versions and flexible versions); ``data`` / ``header`` structs become messages of those
kinds; shared named structs become the ``commonStructs`` of every message that owns them
(``for A B``) or refers to them. Anonymous structs are named by their hint or by
``words.default_struct_name``. Errors found here (a struct a message may not use, circular
structs, clashing tags) still point at the line and column they come from.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from ..ir import PRIMITIVES, FieldDef, MessageDef, StructDef, TypeRef
from ..resolve import SpecError, primitive_default
from ..versions import NONE, VersionRange
from .parser import parse_krammar
from .syntax import Definition, Document, FieldSpec, KrammarError, Position, TypeSpec
from .words import ALL, ALWAYS_NULLABLE, default_struct_name


def load_krammar(path: str | Path) -> dict[str, MessageDef]:
    path = Path(path)
    return lower_document(parse_krammar(path.read_text(encoding="utf-8"), str(path)))


def lower_document(document: Document) -> dict[str, MessageDef]:
    lowering = _Lowering(document)
    for struct in lowering.shared:  # checked even when no message uses them
        lowering.struct_def(struct)
    messages: dict[str, MessageDef] = {}
    request: MessageDef | None = None
    for definition in document.definitions:
        if definition.role == "struct" and definition.message_kind is None:
            continue
        message = lowering.message(definition, request)
        request = message if message.kind == "request" else None
        messages[message.name] = message
    lowering.check_owners(messages)
    return messages


def lower_shared_structs(document: Document) -> tuple[StructDef, ...]:
    """Every named struct that is not a message (``not top level`` or the seed's plain ``Name =>``)."""
    lowering = _Lowering(document)
    return tuple(lowering.struct_def(s) for s in lowering.shared)


class _Lowering:
    def __init__(self, document: Document):
        self.source = document.source
        self.shared = [d for d in document.definitions if d.role == "struct" and d.message_kind is None]
        self.order = {id(d): i for i, d in enumerate(document.definitions)}
        self._struct_defs: dict[int, StructDef] = {}

    def fail(self, message: str, where) -> NoReturn:
        raise KrammarError(message, where.line, where.column, self.source)

    def message(self, d: Definition, request: MessageDef | None) -> MessageDef:
        fields = self.fields(d.fields, d.name)
        common = self.common_structs(d)
        if d.role == "response":
            if request is None:
                self.fail(f"{d.name} has no request to share versions with", d.at)
            return MessageDef(
                d.name, "response", request.api_key, request.valid_versions, request.flexible_versions, fields, common
            )
        kind = d.role if d.role == "request" else d.message_kind
        if kind is None or d.max_version is None:  # the header parser requires both of a message
            self.fail(f"{d.name} is not a message: it has no kind or no max version", d.at)
        return MessageDef(
            d.name,
            kind,
            d.api_key,
            VersionRange(d.min_version, d.max_version),
            d.flexible or NONE,
            fields,
            common,
            latest_version_unstable=d.latest_unstable,
            deprecated_versions=d.deprecated or NONE,
            listeners=d.listeners,
        )

    # -- shared structs ----------------------------------------------------------------------

    def common_structs(self, d: Definition) -> tuple[StructDef, ...]:
        """Structs this message owns, then any ownerless ones it refers to, in file order."""
        table = {s.name: s for s in self.shared if not s.owners}
        table.update({s.name: s for s in self.shared if d.name in s.owners})
        chosen = {id(s): s for s in self.shared if d.name in s.owners}
        self._follow(d.fields, table, chosen, d, (d.name,), d)
        ordered = sorted(chosen.values(), key=lambda s: self.order[id(s)])
        return tuple(self.struct_def(s) for s in ordered)

    def struct_def(self, s: Definition) -> StructDef:
        """A shared struct lowered once, however many messages own or use it."""
        lowered = self._struct_defs.get(id(s))
        if lowered is None:
            lowered = self._struct_defs[id(s)] = StructDef(s.name, ALL, self.fields(s.fields, s.name))
        return lowered

    def _follow(self, fields: tuple[FieldSpec, ...], table, chosen, message: Definition, chain, referrer) -> None:
        """Collect the shared structs ``fields`` use, each defined before ``referrer`` uses it."""
        for field in fields:
            spec = field.type
            if spec.anonymous:
                self._follow(spec.fields, table, chosen, message, chain, referrer)
                continue
            struct = table.get(spec.base)
            if struct is None:
                if any(s.name == spec.base for s in self.shared):
                    self.fail(f"{spec.base} is shared only with other messages ('for'), not {message.name}", spec.at)
                continue  # a primitive
            if spec.base in chain:
                self.fail(f"circular structs: {' -> '.join((*chain[chain.index(spec.base) :], spec.base))}", spec.at)
            if self.order[id(struct)] > self.order[id(referrer)]:
                self.fail(
                    f"{message.name}'s {spec.base} is defined on line {struct.at.line}, after its use: "
                    "named structs must be defined before they are used",
                    spec.at,
                )
            chosen[id(struct)] = struct
            self._follow(struct.fields, table, chosen, message, (*chain, spec.base), struct)

    def check_owners(self, messages: dict[str, MessageDef]) -> None:
        for struct in self.shared:
            column = struct.owners_column
            for owner in struct.owners:
                if owner not in messages:
                    self.fail(
                        f"{struct.name} is 'for' {owner}, which is not a message in this file",
                        Position(struct.at.line, column),
                    )
                column += len(owner) + 1

    # -- fields ------------------------------------------------------------------------------

    def fields(self, specs: tuple[FieldSpec, ...], parent: str) -> tuple[FieldDef, ...]:
        lowered = tuple(self.field(spec, parent) for spec in specs)
        tagged: list[FieldDef] = []
        for spec, field in zip(specs, lowered, strict=True):
            if field.tag is None:
                continue
            for other in tagged:
                if other.tag == field.tag and not other.tagged_versions.intersect(field.tagged_versions).empty:
                    self.fail(f"tag {field.tag} is already used by {other.name} in versions they share", spec.at)
            tagged.append(field)
        return lowered

    def _check_default(self, t: TypeSpec, name: str, nullable: VersionRange, path: str) -> None:
        """A default must make sense for its type, as resolve will read it (``resolve.primitive_default``)."""
        if t.default is None:
            return
        if t.array or t.anonymous or name not in PRIMITIVES:
            if t.default != "null" or nullable.empty:
                self.fail(f"{path}: an array or struct default can only be null, on a nullable field", t.at)
            return
        try:
            primitive_default(name, t.default, not nullable.empty, path)
        except SpecError as e:
            self.fail(str(e), t.at)

    def field(self, spec: FieldSpec, parent: str) -> FieldDef:
        t = spec.type
        versions = spec.versions or ALL
        length_from = None
        inline: tuple[FieldDef, ...] = ()
        name = t.base
        if t.base == "length-field-minus":
            name, length_from = "bytes", (t.length_field, t.length_minus)
        elif t.anonymous:
            name = t.hint or default_struct_name(parent, spec.name, bool(t.array))
            inline = self.fields(t.fields, name)
        if t.nullable:
            nullable = t.nullable_versions or versions
        elif not t.array and t.base in ALWAYS_NULLABLE:
            nullable = versions
        else:
            nullable = NONE
        self._check_default(t, name, nullable, f"{parent}.{spec.name}")
        return FieldDef(
            name=spec.name,
            type=TypeRef(name, bool(t.array), t.array == "varint"),
            versions=versions,
            nullable_versions=nullable,
            tagged_versions=(spec.tagged_versions or versions) if spec.tag is not None else NONE,
            tag=spec.tag,
            flexible_versions=spec.flexible_versions,
            default=t.default,
            map_key=spec.map_key,
            entity_type=spec.entity_type,
            ignorable=spec.ignorable,
            zero_copy=spec.zero_copy,
            fields=inline,
            length_from=length_from,
        )
