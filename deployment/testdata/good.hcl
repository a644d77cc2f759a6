# A valid deployment: plugins start in file order, each after its providers.
host {
  admin_socket = "run/host.sock"
  mcp          = "127.0.0.1:8765"
}

plugin "index" {
  path   = "bin/ok"
  sha256 = "306c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb"
  inject = ["tools", "store"]
  config {
    root = "corpus"
    rule "deny" { tool = "delete_*" }
  }
}

plugin "audit" {
  path = "bin/ok"
}

plugin "store" {
  path   = "bin/other"
  inject = ["logger", "kv"]
}

plugin "kv" {
  path = "bin/ok"
}
