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
//	    record_arguments = false                 # true adds the arguments themselves; default false
//	  }
//	}
//
// A relative path means what it means in the deployment file: the host
// starts plugins in that file's folder. The log and its folder are created
// (0600, 0700) when missing. An existing
// log is verified in full when the plugin starts and continued: its chain
// and seq go on from its last line. A log that does not verify is never
// appended to: the plugin refuses to start and names the first bad line.
// While the plugin runs it holds an exclusive lock on the log (Unix), so two
// processes cannot interleave two chains in one file.
//
// As a command:
//
//	audit verify FILE
//
// prints "ok: N lines intact" and exits 0, or prints
// "FILE:LINE: tampered: reason" for the first bad line and exits 1; it exits
// 2 when it cannot read the file or is used wrongly. The host starts the
// plugin without arguments, which is how main tells the two apart.
package main
