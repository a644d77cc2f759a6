# A plugin that cannot be described is an error at its block.
plugin "broken" {
  path = "bin/ok"
}

plugin "fine" {
  path = "bin/ok"
  config {
    root = 1
  }
}
