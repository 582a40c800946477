package livetrace

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	good := map[string]address{
		"unix:/run/x.sock":   {network: "unix", path: "/run/x.sock"},
		"unix:rel.sock":      {network: "unix", path: "rel.sock"},
		"/run/x.sock":        {network: "unix", path: "/run/x.sock"},
		"tcp:127.0.0.1:9000": {network: "tcp", host: "127.0.0.1", port: "9000"},
		"tcp:9000":           {network: "tcp", port: "9000"},
		"tcp::9000":          {network: "tcp", port: "9000"},
		"tcp:0":              {network: "tcp", port: "0"},
		"tcp:[::1]:9000":     {network: "tcp", host: "::1", port: "9000"},
		"tcp:0.0.0.0:9000":   {network: "tcp", host: "0.0.0.0", port: "9000"},
		"localhost:9000":     {network: "tcp", host: "localhost", port: "9000"},
		"[::1]:9000":         {network: "tcp", host: "::1", port: "9000"},
		"tls:example.org:1":  {network: "tls", host: "example.org", port: "1"},
		"tls:9000":           {network: "tls", port: "9000"},
	}
	for in, want := range good {
		got, err := parseAddress(in)
		if err != nil || got != want {
			t.Errorf("parseAddress(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":               "expected unix:/path",
		"unix:":          "path is empty",
		"tcp:":           "port number",
		"tcp:host:http":  "port number",
		"tcp:1:2:3":      "port number",
		"tcp:70000":      "port number",
		"tls:":           "port number",
		"bogus:foo":      `unknown scheme "bogus:"`,
		"udp:1.2.3.4:53": `unknown scheme "udp:"`,
		"localhost:http": `unknown scheme "localhost:"`,
		"nocolon":        "expected unix:/path",
		"::1":            "expected unix:/path",
	}
	for in, want := range bad {
		_, err := parseAddress(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseAddress(%q) gave %v; want an error saying %q", in, err, want)
		}
	}
}

func TestUnknownSchemeIsNamedWithTheAcceptedForms(t *testing.T) {
	cleanEnv(t)
	_, err := Serve("bogus:foo")
	if err == nil {
		t.Fatal("served on bogus:foo")
	}
	msg := err.Error()
	if strings.Count(msg, "livetrace:") != 1 || !strings.HasPrefix(msg, "livetrace: ") ||
		!strings.Contains(msg, `unknown scheme "bogus:"`) || !strings.Contains(msg, addressForms) {
		t.Fatalf("error %q", msg)
	}
	var stderr bytes.Buffer
	if s := autostart("bogus:foo", &stderr); s != nil {
		t.Fatal("autostart served on bogus:foo")
	}
	out := stderr.String()
	want := `livetrace: not listening (LIVETRACE_LISTEN=bogus:foo): cannot listen on "bogus:foo": unknown scheme "bogus:"; expected ` + addressForms + "\n"
	if out != want {
		t.Fatalf("autostart said %q\nwant %q", out, want)
	}
}

func TestAutostartServesAndRepeatsWarningsOnStderr(t *testing.T) {
	cleanEnv(t)
	t.Setenv("LIVETRACE_TOKEN", "t")
	var stderr bytes.Buffer
	s := autostart("tcp:0.0.0.0:0", &stderr)
	if s == nil {
		t.Fatalf("autostart failed: %s", stderr.String())
	}
	defer closeServer(t, s)
	if !strings.HasPrefix(stderr.String(), "livetrace: listening on tcp:") || !strings.Contains(stderr.String(), "beyond loopback") {
		t.Fatalf("stderr: %q", stderr.String())
	}
}

func TestTCPWithoutHostIsLoopback(t *testing.T) {
	for _, addr := range []string{"tcp:0", "tcp::0"} {
		s, _ := serveTest(t, addr, Options{})
		if !strings.HasPrefix(s.Addr(), "tcp:127.0.0.1:") {
			t.Fatalf("%s listens on %s", addr, s.Addr())
		}
		closeServer(t, s)
	}
}

func TestUnixSocketIsPrivateAndRemovedOnClose(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "t.sock")
	s, _ := serveTest(t, "unix:"+path, Options{})
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Fatalf("the temporary directory stayed: %v %v", entries, err)
	}
	closeServer(t, s)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived Close: %v", err)
	}
}

func TestStaleSocketIsReplacedAndLiveOrForeignOnesRefused(t *testing.T) {
	dir := shortTempDir(t)
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	s, _ := serveTest(t, "unix:"+stale, Options{})
	if _, err := dialAddr(t, s.Addr()); err != nil {
		t.Fatalf("the replaced socket does not answer: %v", err)
	}

	cleanEnv(t)
	if _, err := Serve("unix:" + stale); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("a live socket was taken over: %v", err)
	}
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Serve("unix:" + regular); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("a regular file was replaced: %v", err)
	}
	if _, err := Serve("unix:" + filepath.Join(dir, "missing", "x.sock")); err == nil {
		t.Fatal("served in a directory that does not exist")
	}
}

// A service restarted while the old one is still closing must keep its
// socket: the old one removes the path only if it is still its own.
func TestCloseLeavesASocketThatReplacedOurs(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "shared.sock")
	a, bookA := serveTest(t, "unix:"+path, Options{})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	b, _ := serveTest(t, "unix:"+path, Options{})
	closeServer(t, a)
	if len(bookA.matching("no longer this process's socket")) != 1 {
		t.Fatalf("log: %s", bookA)
	}
	c := dial(t, b)
	c.sendPreamble(1, 1)
	c.readPreamble()
	closeServer(t, b)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the second server left its socket: %v", err)
	}
}

func TestOptionsFromTheEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("LIVETRACE_QUEUE_MB", "2")
	t.Setenv("LIVETRACE_TOKEN", "from-env")
	o := Options{}
	if err := o.fill(); err != nil || o.QueueBytes != 2<<20 || o.Token != "from-env" ||
		o.HandshakeTimeout != DefaultHandshakeTimeout || o.MaxHandshakes != DefaultMaxHandshakes || o.WriteTimeout != DefaultWriteTimeout {
		t.Fatalf("options %+v, %v", o, err)
	}
	for _, bad := range []string{"0", "-1", "lots"} {
		t.Setenv("LIVETRACE_QUEUE_MB", bad)
		if _, err := Serve("tcp:0"); err == nil || !strings.Contains(err.Error(), "LIVETRACE_QUEUE_MB") {
			t.Fatalf("LIVETRACE_QUEUE_MB=%s: %v", bad, err)
		}
	}
	if _, err := ServeWithOptions("tcp:0", Options{QueueBytes: 1000}); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Fatalf("a tiny queue: %v", err)
	}
}
