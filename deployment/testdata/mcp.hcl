# mcp must be host:port on a loopback address; the session cap at least 1;
# the idle timeout a positive duration.
host {
  mcp              = "localhost"
  mcp_max_sessions = 0
  mcp_idle_timeout = "soon"
}

plugin "a" {
  path = "bin/ok"
}
