#!/usr/bin/env python3
"""The search tool, in Python: the twin of plugins/search (same name, same
arguments, same result), calling the same "index" service of the index
plugin. examples/python.hcl runs the sample deployment with it in place of
the Go one."""


from plugkit import Plugin, Tool, serve

DEFAULT_LIMIT, MAX_LIMIT = 10, 100

PARAMETERS = {
    "type": "object",
    "properties": {
        "q": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    },
    "required": ["q"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Full-text search over the indexed documents (a folder of notes and documentation). "
    'Returns the best-matching files first. Each hit has "path" (the file\'s path relative to the indexed folder), '
    '"score" (relevance: higher is better, comparable only within one search) and "snippet" (the text around '
    'the match, matched words in **bold**). "total" counts every matching file and may exceed the hits returned; '
    'raise "limit" (1 to 100, default 10) to see more. '
    'Query syntax in "q": plain words match files containing any of them, files with more of them ranking higher; '
    'English word forms match ("guards" finds "guard"); "quoted words" match an exact phrase; '
    "+word requires a word, -word excludes one; pre* matches a prefix."
)


def apply(p, config):
    def search(call):
        q = call.arguments["q"].strip()
        if not q:
            raise ValueError('"q" is blank: give the words to search for')
        limit = call.arguments.get("limit") or DEFAULT_LIMIT
        got = p.call_service("index", "search", {"q": q, "limit": limit}, call=call)
        hits = got.get("hits") if isinstance(got, dict) else None
        if hits is None:
            raise ValueError('index.search returned no "hits": %.200s' % (got,))
        hits = [{"path": h["path"], "score": h["score"], "snippet": h["snippet"]} for h in hits[:limit]]
        return {"query": q, "total": max(got.get("total", 0), len(hits)), "hits": hits}

    p.register_tool(Tool(name="search", description=DESCRIPTION, parameters=PARAMETERS, execute=search,
                         read_only=True, idempotent=True, timeout=10))


serve(Plugin(name="search", version="0.1.0", inject=["tools", "index"], apply=apply))
