// Package egress is the forward proxy through which a sandboxed plugin
// reaches the network by host name: an allow-list (List) of names,
// wildcards and address ranges, each with a port, and a Proxy per plugin
// serving HTTP CONNECT and plain HTTP requests with absolute URLs.
//
// The proxy resolves names itself and dials only an address it resolved
// for a name the list covers, the very address it checked (a DNS answer
// that changes between a check and a dial changes nothing). A name never
// leads to a private, loopback, link-local (the cloud metadata address
// among them), carrier-grade NAT, multicast or reserved address unless a
// range entry names it. A tunnel's TLS ClientHello, when it carries a
// server name, must carry the CONNECT host. Every connection, allowed or
// refused, is told to Config.Record once it has ended.
//
// The plugin reaches the proxy only: its network namespace has no other
// route out (see package sandbox).
package egress
