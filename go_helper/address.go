package livetrace

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// listen opens the listener named by addr: "unix:/path", "tcp:HOST:PORT",
// "tcp:PORT" (loopback) or "HOST:PORT". The returned cleanup removes what
// listen created on disk.
func listen(addr string) (net.Listener, func(), error) {
	switch {
	case strings.HasPrefix(addr, "unix:"):
		return listenUnix(strings.TrimPrefix(addr, "unix:"))
	case strings.HasPrefix(addr, "tcp:"):
		return listenTCP(strings.TrimPrefix(addr, "tcp:"))
	case strings.HasPrefix(addr, "/"):
		return listenUnix(addr)
	case strings.Contains(addr, ":"):
		return listenTCP(addr)
	}
	return nil, nil, fmt.Errorf("livetrace: cannot listen on %q: expected unix:/path, tcp:HOST:PORT or tcp:PORT", addr)
}

func listenTCP(hostport string) (net.Listener, func(), error) {
	if !strings.Contains(hostport, ":") {
		hostport = ":" + hostport
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, nil, fmt.Errorf("livetrace: bad TCP address %q: %v", hostport, err)
	}
	if host == "" {
		// An address with no host means loopback: exposing the trace of a
		// service to the network must be asked for by naming an interface.
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, nil, fmt.Errorf("livetrace: %v", err)
	}
	return ln, func() {}, nil
}

// listenUnix binds the socket inside a fresh 0700 directory next to path,
// sets its mode to 0600 and only then renames it into place, so that the
// socket is never reachable by others, not even for an instant, and no
// process-wide umask change is needed.
func listenUnix(path string) (net.Listener, func(), error) {
	if path == "" {
		return nil, nil, errors.New("livetrace: empty unix socket path")
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".livetrace-")
	if err != nil {
		return nil, nil, fmt.Errorf("livetrace: cannot create the socket next to %s: %v", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("livetrace: %v", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("livetrace: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("livetrace: %v", err)
	}
	return ln, func() { os.Remove(path) }, nil
}

// removeStaleSocket deletes a socket file left by a process that died, and
// refuses to touch a live socket or anything that is not a socket.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("livetrace: %v", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("livetrace: %s exists and is not a socket; remove it or choose another path", path)
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("livetrace: %s is in use by another process", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("livetrace: cannot tell whether %s is in use: %v", path, err)
	}
	return os.Remove(path)
}
