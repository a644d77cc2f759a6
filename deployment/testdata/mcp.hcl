# mcp must be host:port on a loopback address; the session cap and the
# connections per peer at least 1; the idle timeout a positive duration.
host {
  mcp              = "localhost"
  mcp_max_sessions = 0
  mcp_idle_timeout = "soon"
  mcp_max_conns_per_peer = 0
}

plugin "a" {
  path = "bin/ok"
}
