# A tool is enabled or disabled, not both; names are not empty or repeated.
plugin "index" {
  path = "bin/ok"
  tools {
    enabled  = ["search", "reindex", "stats", "search"]
    disabled = ["reindex", "", "stats"]
  }
}
