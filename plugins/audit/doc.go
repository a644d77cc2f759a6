// Command audit is plugkit's audit plugin: it writes every tool call's final
// result, whatever its outcome, as one line of a hash-chained log, and it
// checks such a log when a person runs it.
//
// As a plugin it injects "tools" and registers one stage-5 (tools/result)
// listener for all tools. The host delivers results in order on one stream;
// each becomes one line (format and hash chain: package auditlog). In a
// deployment:
//
//	plugin "audit" {
//	  path = "bin/audit"
//	  config {
//	    path             = "var/audit/calls.log" # required; relative to the deployment file's folder
//	    fsync            = "interval"            # "always" (default) | "interval" | "never"
//	    fsync_interval   = "1s"                  # with fsync = "interval" only; default "1s"
//	    record_arguments = false                 # true adds the arguments themselves, "redacted" with credentials replaced; default false
//	    fail_open        = false                 # true lets calls through while the log cannot be written
//	    key              = "keys/audit.key"      # optional: sign the chain's head (signing.go)
//	    previous_key     = "keys/old.key"        # optional, with key: rotate from this key
//	    sign_every       = "1s"                  # with key: longest time from a line to its checkpoint
//	  }
//	}
//
// A relative path means what it means in the deployment file: the host
// starts plugins in that file's folder. The log and its folder are created
// (0600, 0700) when missing. An existing
// log is verified in full when the plugin starts and continued: its chain
// and seq go on from its last line. A log that does not verify is never
// appended to: the plugin refuses to start and names the first bad line.
// While the plugin writes it holds an exclusive lock on the log (Unix), so two
// processes cannot interleave two chains in one file.
//
// On a hot reload the host applies the new process while the old one still
// writes. Finding the log locked, the new process checks the folder and the
// file, starts, and opens the log when the old one lets go of it: its first
// result waits for the lock (tried every few milliseconds), then the log is
// verified and its chain continued after the old process's last line. A wait
// longer than 2 minutes is logged as an error, again every 2 minutes, naming
// the path: then something else holds the log, such as a second audit
// plugin on the same file. The results keep waiting meanwhile, unwritten and
// unacknowledged, rather than be dropped. A log found broken at that point
// is not appended to, and every result then logs that it is not recorded.
//
// With fsync = "always" the lines of a batch of results (what the host
// sends on one stream, up to 256) are written as they come and fsynced
// once, together, before the batch is acknowledged (group commit): a
// result is acknowledged, and its receipt handed back, only once its line
// is on disk, with one fsync for every call that came together.
//
// A line is written whole or not at all. When a write or its fsync fails
// (a full disk), the file is cut back to the line before (for a batch's
// fsync, to the line before the batch), and the result (the batch) is
// held, unacknowledged, and written again every 0.1 to 2 seconds until it
// can be; the host queues the results after it meanwhile. While the log
// cannot be written the plugin adds a guard that denies every call, naming
// it (unless fail_open), and reports the problem to the host, which shows it
// in `host status`; both end when the line is written. A log that ends in
// part of a line (a crash mid-write) has that part removed, with a warning,
// when it is opened: it was never a line of the chain.
//
// A result whose call id is among the last 4096 lines' ids when the log is
// opened is skipped: the host sends a critical plugin's results again when
// the process they went to died before acknowledging them, and the process
// may have written some of them.
//
// As a command:
//
//	audit verify [--expect-head HASH] [--key PUBKEY] FILE
//	audit keygen KEYFILE
//	audit prove SEQ FILE
//	audit verify-proof --key PUBKEY [--hash HASH] PROOF
//
// (docs/proving-what-happened.md shows them at work.) Without flags, verify
// prints "ok: N lines intact" and exits 0, or prints
// "FILE:LINE: tampered: reason" for the first bad line and exits 1; it exits
// 2 when it cannot read the file or is used wrongly. The host starts the
// plugin without arguments, which is how main tells the two apart.
package main
