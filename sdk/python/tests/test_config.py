"""The configuration: the schema a plugin declares and the strict decoder."""

import dataclasses
import typing
import unittest

from plugkit import ConfigError
from plugkit import _config


@dataclasses.dataclass
class Limits:
    rate: float
    burst: int = 1


@dataclasses.dataclass
class Config:
    root: str
    banned: typing.List[str] = dataclasses.field(default_factory=list)
    limits: typing.Optional[Limits] = None
    labels: typing.Dict[str, str] = dataclasses.field(default_factory=dict)
    verbose: bool = False
    extra: dict = dataclasses.field(default_factory=dict)


class SchemaTest(unittest.TestCase):
    def test_schema_follows_the_dataclass(self):
        s = _config.schema(Config)
        self.assertEqual(s["required"], ["root"])
        self.assertFalse(s["additionalProperties"])
        self.assertEqual(s["properties"]["root"], {"type": "string"})
        self.assertEqual(s["properties"]["banned"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(s["properties"]["labels"], {"type": "object", "additionalProperties": {"type": "string"}})
        limits = s["properties"]["limits"]["anyOf"][0]
        self.assertEqual(limits["required"], ["rate"])
        self.assertEqual(limits["properties"]["burst"], {"type": "integer"})
        self.assertEqual(s["properties"]["extra"], {"type": "object", "additionalProperties": {}})

    def test_no_config_takes_nothing(self):
        self.assertEqual(_config.schema(None), {"type": "object", "additionalProperties": False})
        self.assertEqual(_config.decode(None, b""), {})
        with self.assertRaisesRegex(ConfigError, "unknown field 'x'"):
            _config.decode(None, b'{"x":1}')


class DecodeTest(unittest.TestCase):
    def test_decodes(self):
        c = _config.decode(Config, b'{"root":"r","banned":["a"],"limits":{"rate":2},"labels":{"k":"v"}}')
        self.assertEqual(c, Config(root="r", banned=["a"], limits=Limits(rate=2.0), labels={"k": "v"}))
        self.assertIsInstance(c.limits.rate, float)

    def test_errors_name_the_field(self):
        for raw, message in [
            (b"{}", "missing required field 'root'"),
            (b'{"root":"r","colour":1}', "unknown field 'colour'"),
            (b'{"root":1}', "field 'root': expected a string, got a number"),
            (b'{"root":"r","limits":{"rate":"x"}}', "field 'limits.rate': expected a number, got a string"),
            (b'{"root":"r","limits":{"rate":1,"burst":1.5}}', "field 'limits.burst': expected an integer"),
            (b'{"root":"r","limits":{"rate":1,"speed":1}}', "unknown field 'limits.speed'"),
            (b'{"root":"r","banned":["a",2]}', r"field 'banned\[1\]': expected a string"),
            (b'{"root":"r","verbose":1}', "field 'verbose': expected a boolean, got a number"),
            (b'{"root":', "invalid JSON at byte"),
            (b"[1]", "expected an object, got an array"),
        ]:
            with self.subTest(raw=raw):
                with self.assertRaisesRegex(ConfigError, message):
                    _config.decode(Config, raw)


if __name__ == "__main__":
    unittest.main()
