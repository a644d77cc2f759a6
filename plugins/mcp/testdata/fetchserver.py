"""A small MCP server over stdio with one tool, fetch, that GETs a URL with
urllib, which honours the proxy variables: the egress tests run it behind a
bridge whose sandbox has an egress list."""
import json
import sys
import urllib.request


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


TOOL = {
    "name": "fetch",
    "description": "GETs a URL and returns its body.",
    "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
}


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return {"content": [{"type": "text", "text": r.read().decode()}]}
    except Exception as e:  # the refusal or failure, as the tool's error
        return {"content": [{"type": "text", "text": "fetch failed: %s" % e}], "isError": True}


for line in sys.stdin:
    req = json.loads(line)
    method, id_ = req.get("method"), req.get("id")
    if id_ is None:
        continue  # a notification
    if method == "initialize":
        reply(id_, {"protocolVersion": req["params"]["protocolVersion"], "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fetchserver", "version": "1"}})
    elif method == "tools/list":
        reply(id_, {"tools": [TOOL]})
    elif method == "tools/call":
        reply(id_, fetch(req["params"]["arguments"]["url"]))
    elif method == "ping":
        reply(id_, {})
    else:
        reply(id_, error={"code": -32601, "message": "no method " + method})
