#!/usr/bin/env python3
"""A plugkit plugin in Python: a tool that counts words, and a guard on it."""

from dataclasses import dataclass, field

from plugkit import Plugin, Tool, serve


@dataclass
class Config:
    max_words: int = 1000  # longer texts are denied
    banned: list[str] = field(default_factory=list)  # words the guard refuses


def apply(p, config):
    def count(call):
        words = call.arguments["text"].split()
        return {"words": len(words), "distinct": len({w.lower() for w in words})}

    def guard(call):
        words = call.arguments.get("text", "").split()
        if len(words) > config.max_words:
            return "text has %d words, over the limit of %d" % (len(words), config.max_words)
        banned = sorted({w.lower() for w in words} & {b.lower() for b in config.banned})
        return "banned words: " + ", ".join(banned) if banned else None

    p.register_tool(Tool(
        name="word_count", description="Counts the words in a text, and the distinct ones.", execute=count, read_only=True,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
    p.add_guard(guard, tools=["word_count"], name="word-limits")


# dry_run: the guard only reads the call, so it answers host explain too.
PLUGIN = Plugin(name="python-example", version="0.1.0", config=Config, inject=["tools"], apply=apply, dry_run=True)

if __name__ == "__main__":  # run by the host; test_plugin.py imports it
    serve(PLUGIN)
