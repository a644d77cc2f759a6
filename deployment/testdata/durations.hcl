# Durations are Go duration strings, greater than zero.
host {
  approval_timeout = "60"
  listener_timeout = "5 minutes"
  start_timeout    = "-1s"
  drain_timeout    = "0s"
  policy {
    retry {
      backoff     = "2s"
      max_backoff = "1s"
    }
  }
}

plugin "index" {
  path = "bin/ok"
  restart {
    window  = "1x"
    backoff = 100
  }
}
