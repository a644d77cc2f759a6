# A host default refined by each plugin's block.
host {
  sandbox {
    network = "none"
    limits {
      memory     = "256MiB"
      open_files = 256
      cpu        = "60s"
    }
  }
}

plugin "index" {
  path = "bin/ok"
  sandbox {
    read = ["bin"]
    limits {
      memory = "1GiB"
    }
  }
}

plugin "fetch" {
  path = "bin/ok"
  sandbox {
    network = [443, "8080"]
    exec    = ["bin/ok"]
    env     = { LANG = "C.UTF-8" }
  }
}

plugin "audit" {
  path = "bin/ok"
}

plugin "trusted" {
  path = "bin/ok"
  sandbox {
    enabled = false
  }
}
