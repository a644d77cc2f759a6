# Host settings out of range.
host {
  admin_socket      = ""
  max_message_bytes = 0
  log_level         = "verbose"
  mcp               = "0.0.0.0:8765"
  policy {
    concurrency = -1
    per_tool    = -2
    retry {
      attempts = 0
    }
  }
}

plugin "index" {
  path   = "bin/ok"
  inject = ["tools", "tools"]
  restart {
    attempts = 0
  }
}
