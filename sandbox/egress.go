package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// How a NetworkEgress plugin's allow-list is enforced (Enforcement.Egress).
const (
	// EgressNetNS: the plugin's network namespace holds only a loopback
	// interface, on which the host's proxy listens; nothing else leaves.
	EgressNetNS = "proxy in netns"
	// EgressLandlock: no network namespace; the plugin shares the host's
	// network and Landlock limits its TCP connects to the proxy's port
	// (on any address) — UDP, and a TCP server on that port elsewhere,
	// are not stopped.
	EgressLandlock = "proxy, TCP by Landlock port only (no network namespace)"
)

// ProxyPort is the port the proxy listens on in a plugin's own network
// namespace (nothing else listens there).
const ProxyPort = 3128

func egressGap(s Support) string {
	if s.LandlockABI < 4 {
		return fmt.Sprintf(": the plugin can reach the network directly (TCP port rules need Landlock ABI 4, the kernel has %d)", s.LandlockABI)
	}
	return ": only its TCP connects are held to the proxy's port; UDP (DNS among it) reaches the network"
}

// ProxyEnv is the environment that sends a plugin's HTTP clients to the
// proxy at port on loopback: upper and lower case, as programs read one
// or the other (curl reads http_proxy in lower case only).
func ProxyEnv(port int) []string {
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+url, lower(k)+"="+url)
	}
	// Loopback is the plugin's own namespace's (or held to the proxy's
	// port by Landlock): nothing is skipped that could reach further.
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// egressListener, in the launcher (in the plugin's new network namespace,
// holding CAP_NET_ADMIN there), brings the loopback interface up, listens
// on 127.0.0.1:port and sends the listening socket to the host over the
// socket fd, which it closes. The host's proxy then accepts the plugin's
// connections from inside the namespace.
func egressListener(fd int, port uint16) error {
	defer unix.Close(fd)
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("egress: loopback up: %w", err)
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress: socket: %w", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("egress: bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		return fmt.Errorf("egress: listen: %w", err)
	}
	if err := unix.Sendmsg(fd, []byte{0}, unix.UnixRights(ln), nil, 0); err != nil {
		return fmt.Errorf("egress: send the listener to the host: %w", err)
	}
	return nil
}

// loopbackUp sets the IFF_UP flag of "lo".
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// EgressSocketPair makes the socket a launcher sends the proxy's listener
// on (see Launch.HostProxyPort): the host's end, and the launcher's, to
// pass at ExtraFiles[Inherit] and close once the process has started.
func EgressSocketPair() (host, launcher *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress-host"), os.NewFile(uintptr(fds[1]), "egress-launcher"), nil
}

// ReceiveListener reads the listener a launcher sends on the host's end of
// an EgressSocketPair, and closes that end. It fails once the launcher's
// end is closed without one (the launcher failed, or exited), so the
// caller must have closed its own copy of that end.
func ReceiveListener(host *os.File) (net.Listener, error) {
	defer host.Close()
	oob := make([]byte, unix.CmsgSpace(4))
	buf := make([]byte, 1)
	_, oobn, _, _, err := unix.Recvmsg(int(host.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("egress: receive the listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("egress: the launcher sent no listener")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("egress: the launcher sent no listener")
	}
	f := os.NewFile(uintptr(fds[0]), "egress-listener")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("egress: listener: %w", err)
	}
	return l, nil
}
