# Every injected service has a provider; inject lists what the plugin needs.
plugin "index" {
  path   = "bin/ok"
  inject = ["tools", "search", "storage"]
}

plugin "storage" {
  path = "bin/ok"
}

plugin "copy" {
  path = "bin/ok"
}

plugin "needy" {
  path   = "bin/ok"
  inject = ["tools"]
}

plugin "implicit" {
  path = "bin/ok"
}
