# The gateway's policy (mcp-gateway.hcl), as cases: each rule of its safety
# plugin at least once letting a bridged call through and once stopping it.
# From the repository's folder, after `make build` (needs Node.js):
#
#   bin/host test -c examples/mcp-gateway.hcl examples/mcp-gateway_test.hcl
#
# Every case is explained (a dry run): the filesystem server never sees a
# call.

# deny "outside-the-sandbox": a path is the server's, relative to its root
# (../run/sandbox); none may leave it.
case "a path above the server's root is denied" {
  tool       = "fs_read_text_file"
  arguments  = { path = "../config.hcl" }
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "outside-the-sandbox"
}

case "an absolute path is denied" {
  tool       = "fs_list_directory"
  arguments  = { path = "/etc" }
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "outside-the-sandbox"
}

# deny "no-secrets": no argument may mention a secret or a password.
case "reading a note is allowed" {
  tool      = "fs_read_text_file"
  arguments = { path = "notes.md" }
  expect    = "ALLOWED"
}

case "reading a secret is denied" {
  tool       = "fs_read_text_file"
  arguments  = { path = "secret.txt" }
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "no-secrets"
}

case "searching for passwords is denied" {
  tool       = "fs_search_files"
  arguments  = { path = ".", pattern = "password" }
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "no-secrets"
}

# ask_destructive: the server marks its writing tools destructive; they
# are asked about, reading tools are not.
case "writing a file is asked about" {
  tool       = "fs_write_file"
  arguments  = { path = "new.md", content = "hello" }
  expect     = "ASK"
  decided_by = "safety"
  rule       = "ask_destructive"
}

case "listing a folder is not asked about" {
  tool      = "fs_list_directory"
  arguments = { path = "." }
  expect    = "ALLOWED"
}

# The deployment's tools block: read_media_file is not served.
case "a disabled tool is unknown" {
  tool      = "fs_read_media_file"
  arguments = { path = "a.png" }
  expect    = "UNKNOWN_TOOL"
}
