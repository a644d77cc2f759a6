package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/plugkit-go/plugkit/internal/lineage"
)

// runningHostFor finds the admin socket of a running host of this user
// that was started as `host run` with config, without reading config:
// when the file is broken, `host status` and `host reload` must still reach
// the host that runs it. It reads each registered host's command line and
// working folder from /proc; ok is false unless exactly one host matches.
func runningHostFor(config string) (socket string, pid int, ok bool) {
	want, err := canonical(config, "")
	if err != nil {
		return "", 0, false
	}
	var found []lineage.Host
	for _, h := range lineage.Hosts() {
		proc := "/proc/" + strconv.Itoa(h.PID)
		cmdline, err := os.ReadFile(proc + "/cmdline")
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(proc + "/cwd")
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
		file, isRun := runConfig(args)
		if !isRun {
			continue
		}
		if got, err := canonical(file, cwd); err == nil && got == want {
			found = append(found, h)
		}
	}
	if len(found) != 1 {
		return "", 0, false
	}
	return found[0].Socket, found[0].PID, true
}

// canonical is path made absolute against dir (the working folder when ""),
// with symbolic links resolved where it exists.
func canonical(path, dir string) (string, error) {
	if !filepath.IsAbs(path) {
		if dir == "" {
			abs, err := filepath.Abs(path)
			if err != nil {
				return "", err
			}
			path = abs
		} else {
			path = filepath.Join(dir, path)
		}
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real, nil
	}
	return filepath.Clean(path), nil
}

// runConfig reads a host's command line (its arguments after the program):
// whether it is `run`, and the deployment file it was given (-c FILE,
// -cFILE, -c=FILE, --config FILE or --config=FILE; else the default).
func runConfig(args []string) (config string, isRun bool) {
	config = defaultFile
	if len(args) > 0 {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return config, isRun
		case a == "-c" || a == "--config":
			if i+1 < len(args) {
				config = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--config="):
			config = strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--"):
			config = strings.TrimPrefix(strings.TrimPrefix(a, "-c"), "=")
		case a == "--socket":
			i++ // its value is not the command
		case !strings.HasPrefix(a, "-") && !isRun:
			if a != "run" {
				return config, false // another command: status, mcp...
			}
			isRun = true
		}
	}
	return config, isRun
}
