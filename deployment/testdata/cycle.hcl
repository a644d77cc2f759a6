# A dependency cycle names its plugins; a plugin may not inject itself.
plugin "first" {
  path   = "bin/ok"
  inject = ["tools", "catalog"]
}

plugin "catalog" {
  path   = "bin/ok"
  inject = ["auth"]
}

plugin "auth" {
  path   = "bin/ok"
  inject = ["search"]
}

plugin "selfish" {
  path   = "bin/ok"
  inject = ["mirror"]
}
