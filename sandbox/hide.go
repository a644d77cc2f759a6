package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MarkSource is the source name of the read-only tmpfs the launcher mounts
// in a sandboxed plugin's mount namespace: every process of that namespace
// (the plugin and whatever it starts, detached or not) shows it in
// /proc/PID/mountinfo, and none can unmount it (Landlock forbids any
// change of the mount topology; a mount namespace made in a nested user
// namespace gets it locked). Package lineage refuses a peer that has it.
const MarkSource = "plugkit-plugin"

// probeMountArg makes the launcher check that it can make its mounts
// private, then exit 0 (Detect).
const probeMountArg = "--probe-mount"

// emptyName is the empty file in the mark's tmpfs that is bound over each
// socket to hide.
const emptyName = "empty"

// makePrivate keeps what the launcher mounts from propagating back to the
// host's namespace, and the host's later mounts from reaching the plugin.
func makePrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: make mounts private: %w", err)
	}
	return nil
}

// hide runs in the launcher, in its own mount namespace, before Landlock
// (which forbids mounting): it mounts the mark on markDir and binds an
// empty read-only file over every socket in cover, so that connect(2) to
// one finds no socket. A folder is not covered: the admin socket's folder
// may hold what the plugin was granted (the sample's run/audit).
func hide(markDir string, cover []string) (err error) {
	defer func() { err = errors.Join(err, dropCaps()) }()
	if err := makePrivate(); err != nil {
		return err
	}
	if markDir == "" {
		return errors.New("mount namespace: no folder for the mark")
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount(MarkSource, markDir, "tmpfs", flags, "size=4k,nr_inodes=4,mode=0755"); err != nil {
		return fmt.Errorf("mount namespace: mark on %s: %w", markDir, err)
	}
	empty := filepath.Join(markDir, emptyName)
	// Made by its owner, which needs no capability but CAP_SYS_ADMIN.
	if err := errors.Join(os.WriteFile(empty, nil, 0o444), os.Chmod(markDir, 0o555)); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := unix.Mount("", markDir, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, ""); err != nil {
		return fmt.Errorf("mount namespace: mark read-only: %w", err)
	}
	for _, p := range cover {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Type() != os.ModeSocket {
			continue // gone, or not a socket: nothing to hide
		}
		if err := unix.Mount(empty, p, "", unix.MS_BIND, ""); err != nil {
			// The other host may have stopped since the check and taken
			// its socket with it: nothing is left to hide, and another
			// host's state must not fail this launch. A socket still
			// there that cannot be covered does fail it.
			if fi, serr := os.Lstat(p); errors.Is(serr, fs.ErrNotExist) || errors.Is(serr, unix.ENOTDIR) ||
				(serr == nil && fi.Mode().Type() != os.ModeSocket) {
				continue
			}
			return fmt.Errorf("mount namespace: cover %s: %w", p, err)
		}
	}
	return nil
}

// dropCaps drops, from the calling thread (the one that execs the plugin),
// the capability a launcher in a user namespace was given to mount (see
// namespaces): the plugin starts with none. A root host's launcher (no
// user namespace) is left as it was. A failure fails the launch: the
// plugin would keep the capability.
func dropCaps() error {
	if os.Geteuid() == 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
