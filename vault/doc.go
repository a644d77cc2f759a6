// Package vault keeps, on the host, the upstream OAuth tokens each user
// consented to (a bridged server's auth block user_consent): one record
// per (principal, plugin), sealed with AES-256-GCM under a key file the
// deployment names, in a file only the host's user may read, or in Redis
// shared by replicas. The record's key is the sealing's additional data,
// so a record moved to another principal or plugin does not open.
//
// The key file holds one hex key a line: the first seals, every line
// opens. To rotate, put a new key on the first line and keep the old one
// below it until every record has been written again (a refresh or a new
// consent rewrites a record), then remove it.
package vault
