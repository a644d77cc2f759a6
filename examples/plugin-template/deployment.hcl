# The plugin's block in a plugkit deployment file: add it to yours, with
# path pointing at the binary `make build` made (relative to this file).
plugin "wordcount" {
  path = "bin/wordcount"
  config {
    forbidden = ["secret", "password"]
  }
  sandbox {} # the host's default sandbox: the plugin needs no files
}
