# Unknown names are errors that say which names are allowed.
hosts {
}

host {
  log_lvl = "info"
  policy {
    timeouts = true
    retry = {}
  }
}

plugin "index" {
  path    = "bin/ok"
  critcal = true
  restart {
    attempt = 3
  }
  tools {
    enable = ["search"]
  }
  path_hint {
  }
}
