package livetrace

// What the tests share: a server with a log book, and a client that speaks
// the protocol byte by byte. The runtime allows one tracer per process, so
// no test runs in parallel and every test closes its server (which waits for
// its session to stop the tracer) before the next one starts.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout keeps a broken test from hanging the run.
const testTimeout = 30 * time.Second

type logBook struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBook) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, fmt.Sprintf(format, args...))
}

// matching returns the lines containing sub.
func (b *logBook) matching(sub string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range b.lines {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

func (b *logBook) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// cleanEnv keeps the caller's environment out of a test's options, and
// its servers' announce records out of the user's runtime directory: they
// go to a private one of the test's, which the helper creates.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"LIVETRACE_TOKEN", "LIVETRACE_QUEUE_MB", "LIVETRACE_TLS_CERT", "LIVETRACE_TLS_KEY", "LIVETRACE_ANNOUNCE"} {
		t.Setenv(k, "")
	}
	t.Setenv("LIVETRACE_RUNTIME_DIR", filepath.Join(t.TempDir(), "rt"))
}

// serveTest starts a server whose log goes to the returned book; it is
// closed when the test ends.
func serveTest(t *testing.T, addr string, opts Options) (*Server, *logBook) {
	t.Helper()
	cleanEnv(t)
	return serveInEnv(t, addr, opts)
}

// serveInEnv is serveTest in the environment the test has set up after
// cleanEnv.
func serveInEnv(t *testing.T, addr string, opts Options) (*Server, *logBook) {
	t.Helper()
	book := &logBook{}
	if opts.Logf == nil {
		opts.Logf = book.logf
	}
	if opts.QueueBytes == 0 {
		opts.QueueBytes = 4 << 20
	}
	s, err := ServeWithOptions(addr, opts)
	if err != nil {
		t.Fatalf("serving on %s: %v", addr, err)
	}
	t.Cleanup(func() { closeServer(t, s) })
	return s, book
}

func closeServer(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Errorf("closing the server: %v", err)
	}
}

// shortTempDir is a directory for unix sockets, whose paths are limited to
// about a hundred bytes (t.TempDir's can be longer).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

type client struct {
	t    *testing.T
	conn net.Conn
}

func dialAddr(t *testing.T, addr string) (net.Conn, error) {
	t.Helper()
	network, where := "tcp", strings.TrimPrefix(addr, "tcp:")
	if strings.HasPrefix(addr, "unix:") {
		network, where = "unix", strings.TrimPrefix(addr, "unix:")
	}
	return net.DialTimeout(network, where, testTimeout)
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	conn, err := dialAddr(t, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, conn)
}

func newClient(t *testing.T, conn net.Conn) *client {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &client{t, conn}
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("writing to the helper: %v", err)
	}
}

func (c *client) sendPreamble(lo, hi uint16) {
	c.t.Helper()
	b := append([]byte(protocolMagic), 0, 0, 0, 0)
	binary.BigEndian.PutUint16(b[len(protocolMagic):], lo)
	binary.BigEndian.PutUint16(b[len(protocolMagic)+2:], hi)
	c.write(b)
}

func (c *client) readPreamble() {
	c.t.Helper()
	lo, hi, err := readPreamble(c.conn)
	if err != nil || lo != protocolMinVersion || hi != protocolMaxVersion {
		c.t.Fatalf("helper preamble: versions %d-%d, %v", lo, hi, err)
	}
}

func (c *client) send(typ byte, body []byte) {
	c.t.Helper()
	c.write(append(frameHeader(nil, typ, len(body)), body...))
}

// hello sends the preambles' exchange and a HELLO with the given fields.
func (c *client) hello(fields map[string]any) {
	c.t.Helper()
	c.sendPreamble(1, 1)
	c.readPreamble()
	if fields == nil {
		fields = map[string]any{}
	}
	body, err := json.Marshal(fields)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(frameHello, body)
}

// frame reads one helper frame.
func (c *client) frame() (byte, []byte) {
	c.t.Helper()
	typ, body, err := c.tryFrame()
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	return typ, body
}

func (c *client) tryFrame() (byte, []byte, error) {
	var h [frameHeaderSize]byte
	if _, err := io.ReadFull(c.conn, h[:]); err != nil {
		return 0, nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(h[1:]))
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return 0, nil, err
	}
	return h[0], body, nil
}

func (c *client) decode(body []byte, v any) {
	c.t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		c.t.Fatalf("decoding %q: %v", body, err)
	}
}

// start says hello and expects the handshake.
func (c *client) start(fields map[string]any) handshakeMsg {
	c.t.Helper()
	c.hello(fields)
	typ, body := c.frame()
	if typ != frameHandshake {
		c.t.Fatalf("expected a handshake, got frame %#x: %s", typ, body)
	}
	var hs handshakeMsg
	c.decode(body, &hs)
	return hs
}

// refused says hello and expects an error frame, then the end of the
// connection.
func (c *client) refused(fields map[string]any) errorMsg {
	c.t.Helper()
	c.hello(fields)
	return c.refusal()
}

func (c *client) refusal() errorMsg {
	c.t.Helper()
	typ, body := c.frame()
	if typ != frameError {
		c.t.Fatalf("expected an error frame, got frame %#x: %q", typ, body)
	}
	var e errorMsg
	c.decode(body, &e)
	c.expectClosed()
	return e
}

// expectClosed reads until the helper closes the connection, which must
// come without any further frame.
func (c *client) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.conn.Read(b[:])
	if n != 0 || err == nil {
		c.t.Fatalf("expected the helper to close the connection, got %d bytes", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("the helper did not close the connection")
	}
}

// session is what a client saw of a session.
type sessionLog struct {
	chunks     [][]byte
	seqs       []uint64
	heartbeats int
	segments   []segmentMsg
	end        endMsg
}

// untilEnd reads frames up to END and checks that the helper closes after it.
func (c *client) untilEnd() sessionLog {
	c.t.Helper()
	var log sessionLog
	for {
		typ, body := c.frame()
		switch typ {
		case frameChunk:
			if len(body) < chunkHeaderSize {
				c.t.Fatalf("chunk frame of %d bytes", len(body))
			}
			log.seqs = append(log.seqs, binary.BigEndian.Uint64(body))
			log.chunks = append(log.chunks, body[chunkHeaderSize:])
		case frameHeartbeat:
			if len(body) != 0 {
				c.t.Fatalf("heartbeat with a %d-byte payload", len(body))
			}
			log.heartbeats++
		case frameSegment:
			var m segmentMsg
			c.decode(body, &m)
			log.segments = append(log.segments, m)
		case frameGap:
		case frameEnd:
			c.decode(body, &log.end)
			c.expectClosed()
			return log
		default:
			c.t.Fatalf("unexpected frame %#x: %q", typ, body)
		}
	}
}

// waitIdle waits until the server has no session and tracing is off.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for s.Status() != nil || trace.IsEnabled() {
		if time.Now().After(deadline) {
			t.Fatal("the session did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually polls cond until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
