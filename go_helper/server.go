package livetrace

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// HelperVersion is sent to consumers in the handshake.
const HelperVersion = "0.1.0"

const (
	// DefaultQueueBytes is the queue's default cap.
	DefaultQueueBytes = 64 << 20
	minQueueBytes     = 1 << 20
	// DefaultWriteTimeout is how long a consumer may accept no data at all
	// before the helper gives up on it and frees the session.
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultHandshakeTimeout is how long a client has from connecting to
	// sending its HELLO.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultMaxHandshakes caps the connections still in their handshake.
	DefaultMaxHandshakes = 16
	// controlWriteTimeout bounds writing the handshake and end frames.
	controlWriteTimeout = 10 * time.Second
	closeGrace          = 5 * time.Second
)

// Options configure a Server. Zero fields take their defaults, or the
// environment's LIVETRACE_TOKEN, LIVETRACE_QUEUE_MB, LIVETRACE_TLS_CERT and
// LIVETRACE_TLS_KEY.
type Options struct {
	// QueueBytes caps the memory holding trace data the consumer has not
	// taken yet (at least 1 MiB).
	QueueBytes int
	// Token, when set, must be presented by every client. Listening beyond
	// loopback requires one.
	Token string
	// WriteTimeout bounds how long a consumer may take no data at all.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds the time from accepting a connection to
	// reading its HELLO (default 5 s).
	HandshakeTimeout time.Duration
	// MaxHandshakes caps the connections still in their handshake; more are
	// closed at once (default 16).
	MaxHandshakes int
	// TLSConfig serves a tls: address; nil loads the PEM files named by
	// LIVETRACE_TLS_CERT and LIVETRACE_TLS_KEY.
	TLSConfig *tls.Config
	// Logf receives one line per session start and end, and summaries of
	// refusals; nil logs through the standard log package.
	Logf func(format string, args ...any)
}

// Server accepts livetrace consumers and serves one trace session at a time.
type Server struct {
	opts     Options
	ln       net.Listener
	cleanup  func()
	addr     string
	warnings []string // said once in the log when the server started

	quit   chan struct{} // closed by Close
	accept chan struct{} // closed once the accept loop has ended

	gate              tokenGate
	refusedTokens     *tally
	refusedHandshakes *tally // version and bad-request refusals
	excess            *tally // connections closed unanswered: too many in their handshake

	mu      sync.Mutex
	cur     *session
	closed  bool
	nextID  uint64
	pending int // connections in their handshake
}

// SessionStatus describes the session in progress.
type SessionStatus struct {
	ID                 uint64    `json:"id"`
	Peer               string    `json:"peer"`
	Client             string    `json:"client"`
	Since              time.Time `json:"since"`
	SentChunks         uint64    `json:"sent_chunks"`
	SentBytes          uint64    `json:"sent_bytes"`
	DroppedChunks      uint64    `json:"dropped_chunks"`
	DroppedBytes       uint64    `json:"dropped_bytes"`
	DroppedGenerations uint64    `json:"dropped_generations"`
}

// Serve listens on addr (unix:/path, tcp:HOST:PORT, tcp:PORT for loopback,
// or tls:HOST:PORT) with default options.
func Serve(addr string) (*Server, error) {
	return ServeWithOptions(addr, Options{})
}

// ServeWithOptions listens on addr with the given options. A TCP or TLS
// address beyond loopback is refused unless a token is set.
func ServeWithOptions(addr string, opts Options) (*Server, error) {
	s, err := listenServer(addr, opts)
	if err != nil {
		return nil, fmt.Errorf("livetrace: %v", err)
	}
	for _, w := range s.warnings {
		s.logf("%s", w)
	}
	go s.serve()
	return s, nil
}

func listenServer(addr string, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	a, err := parseAddress(addr)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if a.network == "tls" {
		if tlsCfg, err = serverTLSConfig(opts.TLSConfig); err != nil {
			return nil, err
		}
	}
	ln, cleanup, err := listen(a, opts.Logf)
	if err != nil {
		return nil, err
	}
	s := newServer(ln, cleanup, addr, opts)
	if a.network == "unix" {
		return s, nil
	}
	s.addr = a.network + ":" + ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		if opts.Token == "" {
			if err := ln.Close(); err != nil {
				opts.Logf("closing the refused listener on %s: %v", s.addr, err)
			}
			return nil, fmt.Errorf("refusing to serve traces on %s without a token: anyone who can reach it could "+
				"trace this service; set LIVETRACE_TOKEN (or Options.Token), or listen on loopback (%s:PORT)", s.addr, a.network)
		}
		w := "listening on " + s.addr + ", beyond loopback: anyone who can reach it and has the token can trace this service"
		if tlsCfg == nil {
			w += "; the token and the trace cross the network unencrypted (tls:HOST:PORT encrypts them)"
		}
		s.warnings = append(s.warnings, w)
	}
	if tlsCfg != nil {
		s.ln = tls.NewListener(ln, tlsCfg)
	}
	return s, nil
}

// newServer makes a server around a listener; opts must be filled.
func newServer(ln net.Listener, cleanup func(), addr string, opts Options) *Server {
	s := &Server{
		opts: opts, ln: ln, cleanup: cleanup, addr: addr,
		quit: make(chan struct{}), accept: make(chan struct{}), gate: newTokenGate(),
	}
	s.refusedTokens = newTally(s.logf, func(n int, since time.Time, latest string) string {
		return fmt.Sprintf("%s since %s (latest from %s)", plural(n, "refused token attempt", "refused token attempts"),
			since.Format(time.RFC3339), latest)
	})
	s.refusedHandshakes = newTally(s.logf, func(n int, since time.Time, latest string) string {
		return fmt.Sprintf("%s since %s (latest from %s)", plural(n, "refused handshake", "refused handshakes"),
			since.Format(time.RFC3339), latest)
	})
	s.excess = newTally(s.logf, func(n int, since time.Time, latest string) string {
		return fmt.Sprintf("%s since %s closed unanswered: %d were already in their handshake (latest from %s)",
			plural(n, "connection", "connections"), since.Format(time.RFC3339), s.opts.MaxHandshakes, latest)
	})
	return s
}

func (o *Options) fill() error {
	if o.Token == "" {
		o.Token = os.Getenv("LIVETRACE_TOKEN")
	}
	if o.QueueBytes == 0 {
		o.QueueBytes = DefaultQueueBytes
		if v := os.Getenv("LIVETRACE_QUEUE_MB"); v != "" {
			mb, err := strconv.Atoi(v)
			if err != nil || mb <= 0 {
				return fmt.Errorf("LIVETRACE_QUEUE_MB=%q is not a positive whole number of MiB", v)
			}
			o.QueueBytes = mb << 20
		}
	}
	if o.QueueBytes < minQueueBytes {
		return fmt.Errorf("a queue of %d bytes is too small; use at least %d", o.QueueBytes, minQueueBytes)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.MaxHandshakes <= 0 {
		o.MaxHandshakes = DefaultMaxHandshakes
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { log.Printf("livetrace: "+format, args...) }
	}
	return nil
}

// Addr is the address consumers connect to.
func (s *Server) Addr() string { return s.addr }

// Status returns the session in progress, or nil.
func (s *Server) Status() *SessionStatus {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	return cur.status()
}

// Close stops listening, ends the session in progress (its consumer gets a
// complete trace and an end frame saying the service is closing) and removes
// the unix socket if it is still this server's.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	close(s.quit)
	err := s.ln.Close()
	<-s.accept
	s.cleanup()
	if cur != nil {
		cur.requestStop(reasonServiceClosing)
		select {
		case <-cur.done:
		case <-time.After(closeGrace):
			// The consumer is not taking the rest: cut it off so the
			// tracer still gets stopped.
			if derr := cur.conn.SetDeadline(time.Now()); derr != nil && !errors.Is(derr, net.ErrClosed) {
				s.logf("session %d: cutting off the consumer: %v", cur.id, derr)
			}
			<-cur.done
		}
	}
	s.refusedTokens.flush()
	s.refusedHandshakes.flush()
	s.excess.flush()
	return err
}

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }

// acquire claims the single session slot, or says who holds it.
func (s *Server) acquire(conn net.Conn, peer, client string) (*session, errorMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorMsg{errCodeClosing, "the service is shutting down"}
	}
	if cur := s.cur; cur != nil {
		return nil, errorMsg{errCodeBusy, fmt.Sprintf("busy: a trace session is already running for %s since %s (%s ago); only one session at a time",
			cur.describe(), cur.since.UTC().Format(time.RFC3339), time.Since(cur.since).Round(time.Second))}
	}
	ring, free, err := allocRing(s.opts.QueueBytes)
	if err != nil {
		return nil, errorMsg{errCodeResources, fmt.Sprintf("cannot allocate the %s queue: %v", formatBytes(uint64(s.opts.QueueBytes)), err)}
	}
	s.nextID++
	sess := &session{
		srv: s, id: s.nextID, conn: conn, peer: peer, client: client, since: time.Now(),
		stopped: make(chan struct{}), done: make(chan struct{}), freeRing: free,
	}
	sess.q = newQueue(ring, func() { sess.requestStop(reasonOverflow) })
	s.cur = sess
	return sess, errorMsg{}
}

func (s *Server) release(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == sess {
		s.cur = nil
	}
}

func formatBytes(n uint64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
