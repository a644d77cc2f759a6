# Values of the wrong type, all reported at once.
host {
  auto_mtls         = "sometimes"
  max_message_bytes = "big"
}

plugin "index" {
  path     = "bin/ok"
  critical = "yes"
  watch    = 1.5
  inject   = "tools"
  restart {
    attempts = 2.5
  }
  tools {
    enabled = "search"
  }
}
