# Syntax errors stop Parse: what follows them cannot be read reliably.
host {
  log_level "info"
}

plugin "index" {
  path = "bin/ok
}
