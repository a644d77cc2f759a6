# The config body must be plain values: no variables, no functions, at most
# one label per block, and a key is an argument or a block type, not both.
plugin "index" {
  path = "bin/ok"
  config {
    root  = var.root
    upper = upper("x")
    rule "a" "b" {
      tool = "x"
    }
    rule "c" {
      name = "d"
    }
    limit = 1
    limit {
    }
  }
}
