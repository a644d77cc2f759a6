package sdk

import (
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
)

// parentPoll is how often the parent watch looks at the parent pid: well
// under the one second in which an orphaned plugin must be gone.
const parentPoll = 200 * time.Millisecond

// exitWithParent ends the process when the host that started it dies, even by
// SIGKILL: go-plugin does not, and an orphaned plugin keeps its tools' files
// and sockets busy. Two mechanisms, because either alone has a gap:
//
//   - the parent-death signal (Linux) is immediate, but it is tied to the
//     host thread that forked the plugin, so it also fires when only that
//     thread ends; parentDeathSignal checks that the parent really changed;
//   - polling the parent pid works everywhere, within parentPoll.
//
// parent is the parent pid read at the very start of Serve, before the host
// could have died: a parent pid that differs from it means the plugin has
// been re-parented (to init or a subreaper).
func exitWithParent(log hclog.Logger, parent int) {
	orphaned := func(how string) {
		log.Warn("host process went away; exiting", "noticed_by", how, "host_pid", parent)
		os.Exit(1)
	}
	parentDeathSignal(log, parent, orphaned)
	go func() {
		t := time.NewTicker(parentPoll)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != parent {
				orphaned("parent watch")
			}
		}
	}()
	// The host may have died between the start of Serve and now.
	if os.Getppid() != parent {
		orphaned("start-up check")
	}
}
