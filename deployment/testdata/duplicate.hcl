# A duplicate plugin is reported at the second, naming the first's line.
host {
}

host {
}

plugin "index" {
  path = "bin/ok"
}

plugin "search" {
  path = "bin/ok"
}

plugin "index" {
  path = "bin/other"
  restart {
  }
  restart {
  }
}
