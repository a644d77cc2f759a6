# A config body is checked against the plugin's declared JSON Schema, and
# each problem is reported where the offending value was written.
plugin "index" {
  path = "bin/ok"
  config {
    root   = 42
    colour = "blue"
    limits = { depth = "deep", width = 3 }
    tags   = ["a", 2]
    rule "deny" {
      tool = 7
    }
    rule {
      tool = "read_*"
    }
  }
}

plugin "needs" {
  path = "bin/ok"
}

plugin "nested" {
  path = "bin/ok"
  config {
    server {
      port = 80
    }
  }
}

plugin "badschema" {
  path = "bin/ok"
}
