"""Protobuf request bodies of built-in kinds (`application/vnd.kubernetes.protobuf`), as JSON.

kubectl's typed clients (create namespace|secret|deployment|..., auth can-i, auth whoami, drain)
send protobuf: the 4-byte `k8s\\0` magic, then a runtime.Unknown whose `raw` is the object's
message (apimachinery pkg/runtime/serializer/protobuf). Field numbers, JSON names, which fields
are inlined and which are pointers come from upstream's generated.proto and types.go
(protobuf_fields.json, made by protobuf_gen.py). A Go value field is always encoded, so its zero
value means "unset" and is dropped, as Go's JSON `omitempty` would; a pointer field keeps it.
"""

from __future__ import annotations

import base64
import functools
import json
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sim.k8s.errors import ApiError

MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_GO_ZERO_TIME = -62135596800  # time.Time{}.Unix()

Field = tuple[
    str, str, str
]  # JSON name, type, label (optional | repeated | map | inline | pointer)


@functools.cache
def _table() -> dict[str, dict[int, Field]]:
    raw = json.loads(Path(__file__).with_name("protobuf_fields.json").read_text())
    return {m: {f[0]: (f[1], f[2], f[3]) for f in fields} for m, fields in raw.items()}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _wire(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value): ints for varint/fixed, bytes for length-delimited."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "bool":
        return bool(value)
    if kind == "double":
        return struct.unpack("<d", value)[0]
    if kind == "float":
        return struct.unpack("<f", value)[0]
    return _signed(value) if kind in ("int32", "int64") else value


def _time(fields: list[tuple[int, int, Any]], micro: bool) -> str | None:
    seconds = next((_signed(v) for n, _, v in fields if n == 1), 0)
    nanos = next((v for n, _, v in fields if n == 2), 0)
    if seconds in (0, _GO_ZERO_TIME) and not nanos:
        return None
    stamp = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _special(message: str, buf: bytes) -> tuple[bool, Any]:
    """The apimachinery types whose JSON is not an object of their fields."""
    if message == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        return True, next((bytes(v).decode() for n, _, v in _wire(buf) if n == 1), "0")
    if message in (_META + "Time", _META + "MicroTime"):
        return True, _time(_wire(buf), micro=message.endswith("MicroTime"))
    if message == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        fields = {n: v for n, _, v in _wire(buf)}
        if fields.get(1, 0) == 1:
            return True, bytes(fields.get(3, b"")).decode()
        return True, _signed(fields.get(2, 0))
    if message in ("k8s.io.apimachinery.pkg.runtime.RawExtension", _META + "FieldsV1"):
        raw = next((bytes(v) for n, _, v in _wire(buf) if n == 1), b"")
        return True, json.loads(raw) if raw else None
    if message.endswith((".ExtraValue", ".Verbs", ".AttestationValue")):
        return True, [bytes(v).decode() for n, _, v in _wire(buf) if n == 1]
    if message == _META + "Duration":
        nanos = next((_signed(v) for n, _, v in _wire(buf) if n == 1), 0)
        return True, f"{nanos / 1e9:g}s"
    return False, None


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == 0 or value is False or value in ({}, [])


def decode_message(message: str, buf: bytes) -> Any:
    special, value = _special(message, buf)
    if special:
        return value
    table = _table().get(message)
    if table is None:
        raise ValueError(f"no protobuf description of {message}")
    out: dict[str, Any] = {}
    for number, wire, raw in _wire(buf):
        spec = table.get(number)
        if spec is None:
            continue  # a field newer than the table: the server drops unknown fields too
        name, kind, label = spec
        scalar = "." not in kind
        if label == "map":
            entry = {n: (w, v) for n, w, v in _wire(raw)}
            key = bytes(entry.get(1, (2, b""))[1]).decode()
            w, v = entry.get(2, (2, b""))
            out.setdefault(name, {})[key] = (
                _scalar(kind, w, v) if scalar else decode_message(kind, bytes(v))
            )
            continue
        if scalar and label == "repeated" and wire == 2 and kind not in ("string", "bytes"):
            packed = _packed(kind, raw)
            out.setdefault(name, []).extend(packed)
            continue
        value = _scalar(kind, wire, raw) if scalar else decode_message(kind, bytes(raw))
        if label == "repeated":
            out.setdefault(name, []).append(value)
        elif label == "inline":
            if isinstance(value, dict):
                out.update(value)
        elif label == "pointer" or not _empty(value):
            out[name] = value
    return out


def _packed(kind: str, raw: bytes) -> list[Any]:
    values: list[Any] = []
    pos = 0
    while pos < len(raw):
        v, pos = _varint(raw, pos)
        values.append(_scalar(kind, 0, v))
    return values


def decode_body(body: bytes) -> dict[str, Any]:
    """The JSON object a protobuf request body stands for; 400 as upstream for a broken one."""
    try:
        if not body.startswith(MAGIC):
            raise ValueError("provided data does not appear to be a protobuf message")
        unknown = {n: v for n, _, v in _wire(body[len(MAGIC) :])}
        type_meta = {n: bytes(v).decode() for n, _, v in _wire(bytes(unknown.get(1, b"")))}
        api_version, obj_kind = type_meta.get(1, ""), type_meta.get(2, "")
        group = api_version.rpartition("/")[0]
        package = f"k8s.io.api.{group.split('.')[0] or 'core'}.{api_version.rpartition('/')[2]}"
        message = f"{package}.{obj_kind}"
        if message not in _table():
            message = _META + obj_kind  # DeleteOptions and the other meta/v1 bodies
        obj = decode_message(message, bytes(unknown.get(2, b"")))
    except (ValueError, UnicodeDecodeError, struct.error) as exc:
        raise ApiError(400, f"the body of the request could not be decoded: {exc}") from exc
    if not isinstance(obj, dict):
        raise ApiError(400, "the body of the request must be an object")
    return {"apiVersion": api_version, "kind": obj_kind, **obj}
