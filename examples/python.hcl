# The sample deployment with plugins written in Python: the search tool is
# plugins/search-python (the twin of plugins/search, on the same index
# service), and plugins/python-example adds a word_count tool with a guard.
# Needs Python 3 with grpcio and protobuf (Debian: python3-grpcio
# python3-protobuf); `make build` first, then from the repository's folder:
#
#   bin/host run -c examples/python.hcl
#
# Paths are relative to this file; every plugin runs in this folder.

host {
  admin_socket     = "../run/python.sock"
  log_level        = "info"
  approval_timeout = "60s"

  policy {
    timeout     = true
    concurrency = 16
  }

  # Confined like the sample's plugins. A Python plugin reads Python from
  # /usr, which every sandbox may read, and the SDK from this repository.
  sandbox {
    network = "none"
    limits {
      memory     = "1GiB"
      open_files = 256
    }
  }
}

plugin "index" {
  path = "../bin/plugins/index"
  config {
    root = "../corpus"
  }
  sandbox {
    read = ["../corpus"]
  }
}

# The Python twin of the search plugin: same tool, same service calls.
plugin "search" {
  path   = "../plugins/search-python/plugin.py"
  inject = ["tools", "index"]
  sandbox {
    read = ["../plugins/search-python", "../sdk/python"]
  }
}

# A tool and a guard in 38 lines of Python (see the file).
plugin "words" {
  path = "../plugins/python-example/plugin.py"
  config {
    max_words = 200
    banned    = ["confidential"]
  }
  sandbox {
    read = ["../plugins/python-example", "../sdk/python"]
  }
}

plugin "files" {
  path = "../bin/plugins/files"
  config {
    root = "../run/sandbox"
  }
  sandbox {
    read  = ["../run/sandbox"]
    write = ["../run/sandbox"]
  }
}

plugin "safety" {
  path     = "../bin/plugins/safety"
  critical = true
  config {
    deny "outside-the-sandbox" {
      tools       = ["read_file", "list_dir", "write_file", "delete_file"]
      path_prefix = ["/", ".."]
      reason      = "paths must stay inside the sandbox"
    }
    deny "no-secrets" {
      pattern = ["(?i)secret", "(?i)password"]
      reason  = "secrets are off limits"
    }
    ask_destructive = true
    secrets {
      arguments = "deny"
      results   = "redact"
    }
  }
}

plugin "audit" {
  path     = "../bin/plugins/audit"
  critical = true
  config {
    path  = "../run/audit/python-audit.log"
    fsync = "always"
  }
  sandbox {
    write = ["../run/audit"]
  }
}
