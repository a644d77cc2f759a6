# The binary must exist and be an executable file; errors point at path.
plugin "missing" {
  path = "bin/missing"
}

plugin "noexec" {
  path = "bin/noexec"
}

plugin "folder" {
  path = "bin/folder"
}

plugin "fine" {
  path = "bin/ok"
}
