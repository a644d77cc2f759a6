# mcp must be host:port on a loopback address.
host {
  mcp = "localhost"
}

plugin "a" {
  path = "bin/ok"
}
