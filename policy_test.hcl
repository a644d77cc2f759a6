# The sample deployment's policy (config.hcl), as cases: every rule of the
# safety plugin at least once letting a call through and once stopping it.
# `bin/host test policy_test.hcl` runs them against a throwaway host started
# from config.hcl; each call is explained (a dry run), none is made.

# deny "outside-the-sandbox": paths must stay inside the sandbox.
case "a path inside the sandbox is allowed" {
  tool       = "read_file"
  arguments  = { path = "notes.md" }
  expect     = "ALLOWED"
}

case "a parent path is denied" {
  tool       = "read_file"
  arguments  = { path = "../config.hcl" }
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "outside-the-sandbox"
}

case "an absolute path is denied, for anyone" {
  tool       = "list_dir"
  arguments  = { path = "/etc" }
  as         = "user:alice"
  expect     = "DENIED"
  decided_by = "safety"
  rule       = "outside-the-sandbox"
}

case "a path that only looks like a parent is allowed" {
  tool      = "list_dir"
  arguments = { path = "..notes" }
  expect    = "ALLOWED"
}

# deny "no-secrets": no argument may mention a secret or a password.
case "a search for plugins is allowed" {
  tool      = "search"
  arguments = { q = "plugins" }
  expect    = "ALLOWED"
}

case "a search for passwords is denied" {
  tool            = "search"
  arguments       = { q = "admin PASSWORD" }
  expect          = "DENIED"
  decided_by      = "safety"
  rule            = "no-secrets"
  reason_contains = "secrets are off limits"
}

case "a file named secret is denied" {
  tool       = "read_file"
  arguments  = { path = "my-secret.txt" }
  expect     = "DENIED"
  rule       = "no-secrets"
}

# ask_destructive: a destructive tool is asked about; others are not.
case "deleting a file is asked about" {
  tool       = "delete_file"
  arguments  = { path = "notes.md" }
  expect     = "ASK"
  decided_by = "safety"
  rule       = "ask_destructive"
}

case "writing a file is asked about" {
  tool      = "write_file"
  arguments = { path = "notes.md", content = "hello" }
  expect    = "ASK"
  rule      = "ask_destructive"
}

case "listing the sandbox is not asked about" {
  tool      = "list_dir"
  arguments = { path = "." }
  expect    = "ALLOWED"
}

# secrets { arguments = "deny" }: a credential in any argument is denied
# before anyone is asked.
case "a credential in the arguments is denied" {
  tool            = "write_file"
  arguments       = { path = "key.txt", content = "aws_access_key_id = AKIAQYLPMN5HFIQR7XYA" }
  expect          = "DENIED"
  decided_by      = "safety"
  rule            = "secrets"
  reason_contains = "aws-access-key"
}

case "a credential in a search is denied" {
  tool      = "search"
  arguments = { q = "AKIAQYLPMN5HFIQR7XYA" }
  expect    = "DENIED"
  rule      = "secrets"
}

case "text without a credential is allowed" {
  tool      = "search"
  arguments = { q = "AKIA is how AWS keys start" }
  expect    = "ALLOWED"
}

# Stage 0: what no rule has to decide.
case "an unknown tool" {
  tool   = "shell"
  expect = "UNKNOWN_TOOL"
}

case "arguments outside the tool's schema" {
  tool      = "read_file"
  arguments = { file = "notes.md" }
  expect    = "INVALID_ARGUMENTS"
}
