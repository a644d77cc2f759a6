# An MCP gateway: an existing MCP server (the reference filesystem server
# from npm) behind the permission pipeline, with the sample safety rules and
# the audit log. Needs Node.js (npx); `make build` first, then from the
# repository's folder:
#
#   bin/host run -c examples/mcp-gateway.hcl
#
# Paths are relative to this file; every plugin runs in this folder.

host {
  admin_socket     = "../run/gateway.sock"
  log_level        = "info"
  approval_timeout = "60s"
  mcp              = "127.0.0.1:8766" # the gateway, for MCP clients (loopback only)

  policy {
    timeout     = true
    concurrency = 16
  }
}

# The filesystem server, started by the bridge and confined by itself to
# ../run/sandbox (made by `make build`; relative to this file, like every
# path here). Its tools are registered as fs_read_text_file, fs_write_file, …
#
# The paths a call gives the server are the server's own business: it
# resolves a relative one against its root, not against this file, so
# '{"path":"notes.md"}' is ../run/sandbox/notes.md.
plugin "fs" {
  path = "../bin/plugins/mcp"
  config {
    command = ["npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "../run/sandbox"]
    prefix  = "fs"
    timeout = "30s"
    tools {
      disabled  = ["read_media_file"] # server tool names, before the prefix
      # The server's hints are not believed: every tool counts as destructive
      # unless named here (see docs/trusting-bridged-servers.md).
      read_only = ["read_*", "list_*", "directory_tree", "search_files", "get_file_info"]
    }
  }
}

# A server reached over streamable HTTP instead:
#
# plugin "remote" {
#   path = "../bin/plugins/mcp"
#   config {
#     url    = "https://mcp.example.com/mcp"
#     prefix = "remote"
#     headers {
#       Authorization = "Bearer …"
#     }
#   }
# }

# The sample rules apply to the bridged tools unchanged: the filesystem
# server marks write_file, edit_file and move_file destructive, so they are
# asked; secrets are denied before the server sees the call. The server
# refuses paths outside its root itself; the first rule refuses them before
# it is asked, as the sample's rule does for the files plugin.
plugin "safety" {
  path     = "../bin/plugins/safety"
  critical = true
  config {
    deny "outside-the-sandbox" {
      tools       = ["fs_*"]
      arguments   = ["path", "paths", "source", "destination"]
      path_prefix = ["/", ".."]
      reason      = "paths must stay inside the sandbox (relative to it)"
    }
    deny "no-secrets" {
      pattern = ["(?i)secret", "(?i)password"]
      reason  = "secrets are off limits"
    }
    ask_destructive = true
  }
}

plugin "audit" {
  path = "../bin/plugins/audit"
  config {
    path  = "../run/gateway-audit.log"
    fsync = "always"
  }
}
