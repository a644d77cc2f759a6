"""Makes a new plugin: ``python3 -m plugkit.new NAME [FOLDER]``.

Writes FOLDER/plugin.py (FOLDER defaults to NAME), a runnable plugin with
a tool and a guard whose ``#!`` line names the Python running this command
(the one plugkit is installed in), and FOLDER/test_plugin.py, its test
with plugkit.testing; prints the deployment block that runs it.
"""

import os
import re
import stat
import sys

_PLUGIN = '''#!{python}
"""The {name} plugin: a tool, {name}_echo, and a guard on it."""

from dataclasses import dataclass, field

from plugkit import Plugin, Tool, serve


@dataclass
class Config:
    # Words the guard refuses; the deployment's config block sets it.
    forbidden: list = field(default_factory=list)


def apply(p, config):
    p.register_tool(
        Tool(
            name="{name}_echo",
            description="Answers the text it is given.",
            parameters={{"type": "object", "properties": {{"text": {{"type": "string"}}}}, "required": ["text"]}},
            read_only=True,
            execute=lambda call: call.arguments["text"],
        )
    )

    def guard(call):
        for word in call.arguments.get("text", "").lower().split():
            if word in config.forbidden:
                return "the text holds the forbidden word " + word
        return None

    p.add_guard(guard, tools=["{name}_echo"], name="{name}-forbidden")


PLUGIN = Plugin(name="{name}", inject=["tools"], config=Config, apply=apply)

if __name__ == "__main__":
    serve(PLUGIN)
'''

_TEST = '''"""The {name} plugin's tests: no host, the plugin in this process."""

import unittest

from plugkit import testing

from plugin import PLUGIN


class PluginTest(unittest.TestCase):
    def test_echo(self):
        with testing.start(PLUGIN, config={{"forbidden": ["secret"]}}) as p:
            self.assertEqual(p.call("{name}_echo", {{"text": "hi"}}), testing.Result(ok=True, value="hi"))
            r = p.call("{name}_echo", {{"text": "a secret"}})
            self.assertEqual((r.code, r.message), ("DENIED", "the text holds the forbidden word secret"))

    def test_conformance(self):
        self.assertEqual(testing.conformance(PLUGIN, config={{"forbidden": []}}), [])


if __name__ == "__main__":
    unittest.main()
'''


def interpreter():
    """The #! line's program: this Python, which imports this plugkit
    (empty when Python could not tell, as without PATH)."""
    return sys.executable or "/usr/bin/env python3"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2) or not re.fullmatch(r"[a-z][a-z0-9_]*", argv[0]):
        sys.stderr.write("usage: python3 -m plugkit.new NAME [FOLDER]   (NAME: lower-case letters, digits, _)\n")
        return 2
    name = argv[0]
    folder = argv[1] if len(argv) == 2 else name
    if os.path.exists(folder) and os.listdir(folder):
        sys.stderr.write("plugkit.new: %s is not empty; choose a new folder\n" % folder)
        return 1
    os.makedirs(folder, exist_ok=True)
    plugin = os.path.join(folder, "plugin.py")
    with open(plugin, "w") as f:
        f.write(_PLUGIN.format(name=name, python=interpreter()))
    os.chmod(plugin, os.stat(plugin).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    with open(os.path.join(folder, "test_plugin.py"), "w") as f:
        f.write(_TEST.format(name=name))
    prefix = sys.prefix
    print(
        'plugin "{name}" {{\n  path = "{path}"\n  config {{\n    forbidden = ["secret"]\n  }}\n'
        '  sandbox {{\n    read = ["{folder}", "{prefix}"]\n  }}\n}}'.format(
            name=name, path=os.path.abspath(plugin), folder=os.path.abspath(folder), prefix=prefix
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
