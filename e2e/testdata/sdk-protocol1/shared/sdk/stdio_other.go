//go:build !unix

package sdk

// protectHandshake does nothing where file descriptors cannot be
// redirected; go-plugin still replaces os.Stdout after the handshake line.
func protectHandshake() error { return nil }
