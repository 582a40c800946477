package livetrace

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// addressForms lists what LIVETRACE_LISTEN and Serve accept, for error
// messages.
const addressForms = "unix:/path, tcp:HOST:PORT, tcp:PORT (loopback), tls:HOST:PORT, tls:PORT (loopback) or HOST:PORT"

// address is a parsed listen address.
type address struct {
	network string // "unix", "tcp" or "tls"
	path    string // unix only
	host    string // tcp and tls: empty for loopback
	port    string
}

// parseAddress reads "unix:/path", "/path", "tcp:HOST:PORT", "tcp:PORT",
// "tcp::PORT", the same three with "tls:", or "HOST:PORT". Ports are
// numbers: a name that is not one is most likely a mistyped scheme.
func parseAddress(addr string) (address, error) {
	for _, scheme := range []string{"unix", "tcp", "tls"} {
		rest, ok := cutPrefix(addr, scheme+":")
		if !ok {
			continue
		}
		if scheme == "unix" {
			if rest == "" {
				return address{}, fmt.Errorf("cannot listen on %q: the unix socket path is empty", addr)
			}
			return address{network: scheme, path: rest}, nil
		}
		if !strings.Contains(rest, ":") {
			rest = ":" + rest
		}
		host, port, err := net.SplitHostPort(rest)
		if err != nil || !isPort(port) {
			return address{}, fmt.Errorf("cannot listen on %q: expected %s:HOST:PORT or %s:PORT with a port number", addr, scheme, scheme)
		}
		return address{network: scheme, host: host, port: port}, nil
	}
	if strings.HasPrefix(addr, "/") {
		return address{network: "unix", path: addr}, nil
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && isPort(port) {
		return address{network: "tcp", host: host, port: port}, nil
	}
	if i := strings.Index(addr, ":"); i > 0 {
		return address{}, fmt.Errorf("cannot listen on %q: unknown scheme %q; expected %s", addr, addr[:i+1], addressForms)
	}
	return address{}, fmt.Errorf("cannot listen on %q: expected %s", addr, addressForms)
}

// cutPrefix is strings.CutPrefix, which Go 1.19 lacks.
func cutPrefix(s, prefix string) (string, bool) {
	if !strings.HasPrefix(s, prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

func isPort(s string) bool {
	_, err := strconv.ParseUint(s, 10, 16)
	return err == nil
}

// hostPort is the TCP address to bind. An address with no host means
// loopback: exposing the trace of a service to the network must be asked
// for by naming an interface.
func (a address) hostPort() string {
	host := a.host
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, a.port)
}

// listen opens the listener for a (TLS is layered on by the caller). The
// returned cleanup removes what listen created on disk.
func listen(a address, logf func(string, ...any)) (net.Listener, func(), error) {
	if a.network == "unix" {
		return listenUnix(a.path, logf)
	}
	ln, err := net.Listen("tcp", a.hostPort())
	if err != nil {
		return nil, nil, err
	}
	return ln, func() {}, nil
}

// listenUnix binds the socket inside a fresh 0700 directory next to path,
// sets its mode to 0600 and only then renames it into place, so that the
// socket is never reachable by others, not even for an instant, and no
// process-wide umask change is needed.
func listenUnix(path string, logf func(string, ...any)) (net.Listener, func(), error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".livetrace-")
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create the socket next to %s: %v", path, err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			logf("could not remove the temporary directory %s: %v", dir, err)
		}
	}()
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, func(), error) {
		if cerr := ln.Close(); cerr != nil {
			logf("closing the half-made listener on %s: %v", path, cerr)
		}
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	ours, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return ln, func() { removeOwnFile(path, ours, "socket", logf) }, nil
}

// removeOwnFile deletes the file at path only if it is still the one this
// process created (same device and inode): another process may have
// replaced it since, and its socket or record must stay where it is.
func removeOwnFile(path string, ours os.FileInfo, what string, logf func(string, ...any)) {
	now, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		logf("not removing %s: %v", path, err)
		return
	}
	if !os.SameFile(ours, now) {
		logf("not removing %s: it is no longer this process's %s", path, what)
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		logf("could not remove %s: %v", path, err)
	}
}

// removeStaleSocket deletes a socket file left by a process that died, and
// refuses to touch a live socket or anything that is not a socket.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another path", path)
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		// Only probing: whether the probe closes cleanly changes nothing.
		_ = c.Close()
		return fmt.Errorf("%s is in use by another process", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether %s is in use: %v", path, err)
	}
	return os.Remove(path)
}
