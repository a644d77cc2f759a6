# The sample deployment: `make run` builds every binary and starts this file.
# Paths are relative to this file. `bin/host validate` checks it without
# starting anything.

host {
  admin_socket     = "run/host.sock"
  log_level        = "info"
  approval_timeout = "60s"

  policy {
    timeout     = true # each tool's declared timeout is enforced
    concurrency = 16   # at most 16 calls at once across all tools
  }

  # Every plugin runs confined: no network, nothing of the file system but
  # what it needs to run, bounded memory and files. Each plugin's own
  # sandbox block adds the folders it works in.
  sandbox {
    network = "none"
    limits {
      memory     = "1GiB"
      open_files = 256
    }
  }
}

# A full-text index over the shipped corpus, provided as the "index" service.
plugin "index" {
  path = "bin/plugins/index"
  config {
    root = "corpus"
  }
  sandbox {
    read = ["corpus"]
  }
}

# The search tool; it needs the index service, so it starts after "index".
plugin "search" {
  path   = "bin/plugins/search"
  inject = ["tools", "index"]
}

# File tools confined to run/sandbox, a working copy `make build` makes of
# the tracked sandbox.example/ when it is missing (delete it to start over).
plugin "files" {
  path = "bin/plugins/files"
  config {
    root = "run/sandbox"
  }
  sandbox {
    read  = ["run/sandbox"]
    write = ["run/sandbox"]
  }
}

# Rules over everyone's tools. Critical: while it is not running, every call
# is denied. A pattern rule checks every string in a call's arguments
# (arguments = [...] narrows it); path_prefix checks the path argument.
plugin "safety" {
  path     = "bin/plugins/safety"
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

    # Credentials (private keys, cloud and service tokens, JWTs, key = value
    # assignments of high entropy) in any tool's arguments and results.
    secrets {
      arguments = "deny"   # deny | ask | off
      results   = "redact" # redact | block | off
    }
  }
}

# One hash-chained JSON line per call, for every outcome. Critical: while
# it is down, or its log cannot be written (a full disk), every call is
# DENIED naming audit, and no outcome is lost.
plugin "audit" {
  path     = "bin/plugins/audit"
  critical = true
  config {
    path  = "run/audit/audit.log"
    fsync = "always"
  }
  # A folder of its own: a plugin that could write run/ could replace the
  # admin socket there (`host validate` refuses that).
  sandbox {
    write = ["run/audit"]
  }
}
