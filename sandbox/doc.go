// Package sandbox runs a plugin process with least privilege: a Policy
// (what it may read, write and execute, its network, its resource limits,
// its user) is applied by a small launcher between fork and exec, so it is
// in force before the plugin's first instruction and the plugin cannot lift
// it, whatever language it is written in.
//
// The launcher is the host binary itself, run with the hidden subcommand
// Subcommand (see Main). Command builds the launcher's command line and the
// namespaces it is cloned into; the launcher then joins the process's
// cgroup, mounts what hides the admin sockets, sets the rlimits, applies
// Landlock (filesystem, TCP and IPC scopes) with no_new_privs, switches
// user when asked, and execs the plugin.
//
// Mechanisms, all Linux's own:
//
//   - filesystem: Landlock. Besides the declared folders, a plugin may read
//     the system's libraries (/usr, /lib, /lib64, /etc/ld.so.cache), read and
//     execute its own binary and ELF interpreter, read /proc/self, read and
//     write /dev/null and the host's private socket folder (its go-plugin
//     socket goes there).
//   - network "none": a new network namespace (with a user namespace when
//     the host is not root), and Landlock refusing every TCP bind and
//     connect; a port list: Landlock allows TCP connect to those ports only.
//   - IPC: Landlock scopes, so the plugin cannot signal processes outside
//     its sandbox (the host among them) or reach their abstract sockets;
//     Landlock also refuses ptrace of them.
//   - the hosts' admin sockets: a mount namespace of its own (in the user
//     namespace, when the host is not root, where the launcher keeps
//     CAP_SYS_ADMIN only until it has mounted), with private mounts, a
//     read-only tmpfs named MarkSource that marks the namespace for package
//     lineage, and an empty file from it over each admin socket the host
//     names (Landlock does not govern connect on pathname sockets).
//   - limits: a cgroup of the process's own where the host can make one
//     (NewCgroup: memory and pids, joined by the launcher first, emptied
//     and removed by Cgroup.Close once the process has ended), and rlimits
//     (RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_CPU).
//   - no_new_privs, and with a root host an optional switch to another user.
//
// Detect says what the running kernel supports, and Policy.Enforcement what
// of a policy it can enforce: a weaker kernel confines less, which the host
// reports (and refuses for a policy marked Required).
package sandbox
