"""A plugin's configuration: a dataclass, its JSON Schema, and a strict decoder.

The Go SDK derives the schema it declares in Describe from the struct the
configuration is decoded into; this module does the same from a
dataclass, so the two can never disagree. A field without a default is
required; one with a default may be left out. Types: str, int, float, bool,
list[T], dict[str, T], Optional[T] (may be null), another dataclass, and
typing.Any (anything). Decoding refuses an unknown field, a missing
required one and a value of the wrong type, naming the field as the
deployment file wrote it.
"""

import dataclasses
import json
import typing


class ConfigError(ValueError):
    """The configuration does not fit the plugin's config class."""


_MISSING = dataclasses.MISSING


def schema(cls):
    """The JSON Schema of dataclass cls (None: an object with no fields)."""
    if cls is None:
        return {"type": "object", "additionalProperties": False}
    return _schema(cls)


def _optional(tp):
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Union and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return None


def _bare(tp):
    """list and dict without parameters mean list[Any] and dict[str, Any]."""
    return {list: typing.List[typing.Any], dict: typing.Dict[str, typing.Any]}.get(tp, tp)


def _schema(tp):
    tp = _bare(tp)
    inner = _optional(tp)
    if inner is not None:
        return {"anyOf": [_schema(inner), {"type": "null"}]}
    origin = typing.get_origin(tp)
    if tp is typing.Any:
        return {}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin is list:
        (item,) = typing.get_args(tp) or (typing.Any,)
        return {"type": "array", "items": _schema(item)}
    if origin is dict:
        _, value = typing.get_args(tp) or (str, typing.Any)
        return {"type": "object", "additionalProperties": _schema(value)}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        props, required = {}, []
        for f in dataclasses.fields(tp):
            s = _schema(hints[f.name])
            if f.metadata.get("doc"):
                s["description"] = f.metadata["doc"]
            props[f.name] = s
            if f.default is _MISSING and f.default_factory is _MISSING:
                required.append(f.name)
        out = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            out["required"] = required
        return out
    raise TypeError("config: unsupported field type %r" % (tp,))


def decode(cls, raw):
    """Decodes the JSON bytes raw into an instance of cls (a dict when cls is None)."""
    text = raw.decode() if isinstance(raw, (bytes, bytearray)) else (raw or "")
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise ConfigError("config: invalid JSON at byte %d: %s" % (e.pos, e.msg)) from None
    if cls is None:
        if not isinstance(value, dict):
            raise ConfigError("config: expected an object, got %s" % _kind(value))
        if value:
            raise ConfigError("config: unknown field %r (this plugin takes no configuration)" % sorted(value)[0])
        return {}
    return _decode(cls, value, "")


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _where(path):
    return "config: field %r: " % path if path else "config: "


def _decode(tp, v, path):
    tp = _bare(tp)
    inner = _optional(tp)
    if inner is not None:
        return None if v is None else _decode(inner, v, path)
    origin = typing.get_origin(tp)
    want = None
    if tp is typing.Any:
        return v
    if tp is bool:
        if isinstance(v, bool):
            return v
        want = "a boolean"
    elif tp is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        want = "an integer"
    elif tp is float:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        want = "a number"
    elif tp is str:
        if isinstance(v, str):
            return v
        want = "a string"
    elif origin is list:
        if isinstance(v, list):
            (item,) = typing.get_args(tp) or (typing.Any,)
            return [_decode(item, x, "%s[%d]" % (path, i)) for i, x in enumerate(v)]
        want = "an array"
    elif origin is dict:
        if isinstance(v, dict):
            _, value = typing.get_args(tp) or (str, typing.Any)
            return {k: _decode(value, x, _join(path, k)) for k, x in v.items()}
        want = "an object"
    elif dataclasses.is_dataclass(tp):
        if not isinstance(v, dict):
            want = "an object"
        else:
            hints = typing.get_type_hints(tp)
            fields = {f.name: f for f in dataclasses.fields(tp)}
            for k in v:
                if k not in fields:
                    raise ConfigError("config: unknown field %r" % _join(path, k))
            kwargs = {}
            for name, f in fields.items():
                if name in v:
                    kwargs[name] = _decode(hints[name], v[name], _join(path, name))
                elif f.default is _MISSING and f.default_factory is _MISSING:
                    raise ConfigError("config: missing required field %r" % _join(path, name))
            return tp(**kwargs)
    if want is None:
        raise TypeError("config: unsupported field type %r" % (tp,))
    raise ConfigError("%sexpected %s, got %s" % (_where(path), want, _kind(v)))


def _join(path, key):
    return "%s.%s" % (path, key) if path else key
