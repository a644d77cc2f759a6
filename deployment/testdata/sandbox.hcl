# Sandbox blocks: paths, network, limits, env and user are checked.
host {
  sandbox {
    read    = ["bin", ""]
    network = "nowhere"
    limits {
      memory     = "256 MB"
      open_files = 0
      cpu        = "500ms"
    }
  }
}

plugin "index" {
  path = "bin/ok"
  sandbox {
    read     = ["no-such-folder"]
    exec     = ["bin/missing"]
    network  = [443, 70000, "x"]
    env      = { "1BAD" = "x" }
    user     = "no-such-user-here"
    required = "yes"
    limits {
      memory    = "lots"
      processes = -1
      swap      = 1
    }
  }
}

plugin "search" {
  path = "bin/ok"
  sandbox {
    network = []
    limits {
      memory = "12XB"
    }
  }
}
