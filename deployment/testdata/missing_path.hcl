# A plugin needs a name and a path.
plugin "index" {
  critical = true
}

plugin {
  path = "bin/ok"
}

plugin "empty" {
  path = ""
}

plugin "bad name" {
  path = "bin/ok"
}

plugin "null" {
  path   = null
  sha256 = "xyz"
}

plugin "index" {
  path = 42
  critical = "very"
}
