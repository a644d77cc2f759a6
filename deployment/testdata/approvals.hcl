# Approval routes: checked names, selectors, quorum, tools and webhook.
approval "oncall" {
  approvers = ["group:oncall"]
  quorum    = 2
  timeout   = "15m"
  tools     = ["files_delete", "deploy_*"]
  webhook {
    url         = "https://hooks.example.com/plugkit"
    secret_env  = "ONCALL_HOOK_SECRET"
    console_url = "https://console.example.com"
  }
}

approval "caller" {
  approvers = ["user:alice"]
  tools     = ["x"]
}

approval "oncall" {
  approvers = ["user:alice"]
  tools     = ["y"]
}

approval "pair" {
  approvers = ["user:alice", "user:alice"]
  quorum    = 2
  tools     = ["[z"]
}

approval "empty" {
  approvers = ["oncall"]
  timeout   = "0s"
  webhook {
    url = "ftp://x"
  }
}

plugin "index" {
  path = "bin/ok"
}
