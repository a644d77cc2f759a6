# sha256 must be 64 hex digits and match the binary; errors point at sha256.
plugin "malformed" {
  path   = "bin/ok"
  sha256 = "9f86d0"
}

plugin "mismatch" {
  path   = "bin/other"
  sha256 = "306C6CA7407560340797866E077E053627AD409277D1B9DA58106FCE4CF717CB"
}

plugin "pinned" {
  path   = "bin/ok"
  sha256 = "306C6CA7407560340797866E077E053627AD409277D1B9DA58106FCE4CF717CB"
}
