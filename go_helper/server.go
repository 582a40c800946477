package livetrace

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"runtime/trace"
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
	// DefaultMaxConsumers caps the consumers sharing the trace at once.
	DefaultMaxConsumers = 8
	// tracerFreeWait bounds how long a consumer arriving while the previous
	// trace is still stopping waits for it, rather than being refused.
	tracerFreeWait = 5 * time.Second
	// controlWriteTimeout bounds writing the handshake and end frames.
	controlWriteTimeout = 10 * time.Second
	closeGrace          = 5 * time.Second
)

// Options configure a Server. Zero fields take their defaults, or the
// environment's LIVETRACE_TOKEN, LIVETRACE_QUEUE_MB, LIVETRACE_MAX_CONSUMERS,
// LIVETRACE_TLS_CERT, LIVETRACE_TLS_KEY and LIVETRACE_ANNOUNCE.
type Options struct {
	// QueueBytes caps the memory holding trace data the consumers have not
	// taken yet (at least 1 MiB): one ring shared by all of them.
	QueueBytes int
	// MaxConsumers caps the consumers attached at once (default 8); more are
	// refused as busy, with the names of those attached (not through
	// PprofTraceHandler, which applies no access control of its own).
	MaxConsumers int
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
	// NoAnnounce keeps the server from writing its announce record, which
	// lets livetrace ps and pid:N find it (on unix systems; also switched
	// off by LIVETRACE_ANNOUNCE=0). See docs/protocol.md of the repository.
	NoAnnounce bool
}

// Server accepts livetrace consumers and serves them all from one runtime
// trace, started with the first and stopped when the last leaves.
type Server struct {
	opts     Options
	ln       net.Listener
	cleanup  func()
	addr     string
	warnings []string // said once in the log when the server started

	announced *announcement // the record this server wrote, if any; under announcing's lock

	quit   chan struct{} // closed by Close
	accept chan struct{} // closed once the accept loop has ended

	gate              tokenGate
	refusedTokens     *tally
	refusedHandshakes *tally // version and bad-request refusals
	// Clients that got past the handshake but were not attached: busy,
	// a legacy trace running, the service closing. Anyone who can reach the
	// helper (or PprofTraceHandler) can be refused as fast as they reconnect,
	// and a busy refusal names every consumer: one line each would flood the
	// service's log.
	refusedSessions *tally
	excess          *tally // connections closed unanswered: too many in their handshake

	mu      sync.Mutex
	hub     *hub // the trace running, or the last one (released once over)
	closed  bool
	nextID  uint64
	pending int // connections in their handshake
}

// SessionStatus describes one consumer's session in progress.
type SessionStatus struct {
	ID                 uint64    `json:"id"`
	Peer               string    `json:"peer"`
	Client             string    `json:"client"`
	Since              time.Time `json:"since"`
	Joined             bool      `json:"joined_running"` // attached to a trace already running
	Ending             bool      `json:"ending"`         // its stream is ending (stop, duration, disconnect)
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
	s.announce()
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
	s.refusedSessions = newTally(s.logf, func(n int, since time.Time, latest string) string {
		return fmt.Sprintf("%s since %s (latest from %s)", plural(n, "refused session", "refused sessions"),
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
	if o.MaxConsumers <= 0 {
		o.MaxConsumers = DefaultMaxConsumers
		if v := os.Getenv("LIVETRACE_MAX_CONSUMERS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("LIVETRACE_MAX_CONSUMERS=%q is not a positive whole number", v)
			}
			o.MaxConsumers = n
		}
	}
	if os.Getenv("LIVETRACE_ANNOUNCE") == "0" {
		o.NoAnnounce = true
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { log.Printf("livetrace: "+format, args...) }
	}
	return nil
}

// Addr is the address consumers connect to.
func (s *Server) Addr() string { return s.addr }

// Status lists the consumers attached, oldest first, or nil if none is.
func (s *Server) Status() []SessionStatus {
	s.mu.Lock()
	h := s.hub
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []SessionStatus
	for _, c := range h.members {
		out = append(out, c.statusLocked())
	}
	return out
}

// Close stops listening, ends the trace (every consumer gets a complete
// trace and an end frame saying the service is closing) and removes the
// unix socket and the announce record if they are still this server's.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	h := s.hub
	s.mu.Unlock()
	s.withdraw() // first: a record must not outlive the listener it names
	close(s.quit)
	err := s.ln.Close()
	<-s.accept
	s.cleanup()
	if h != nil {
		h.stop(reasonServiceClosing)
		select {
		case <-h.released:
		case <-time.After(closeGrace):
			// Consumers not taking the rest are cut off, so that the
			// tracer still gets stopped and the ring released.
			h.mu.Lock()
			members := append([]*consumer(nil), h.members...)
			h.mu.Unlock()
			for _, c := range members {
				if derr := c.conn.SetDeadline(time.Now()); derr != nil && !errors.Is(derr, net.ErrClosed) {
					s.logf("session %d: cutting off the consumer: %v", c.id, derr)
				}
			}
			<-h.released
		}
	}
	s.refusedTokens.flush()
	s.refusedHandshakes.flush()
	s.refusedSessions.flush()
	s.excess.flush()
	return err
}

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }

// attach adds a consumer to the running trace, or starts the trace for
// it. A consumer arriving while the previous trace is still stopping waits
// for it (tracerFreeWait at most). A nil consumer with an empty errorMsg
// means the connection was given up on without a word.
func (s *Server) attach(conn net.Conn, peer string, hello helloMsg) (*consumer, refusal) {
	c := &consumer{
		srv: s, conn: conn, peer: peer, client: hello.Client, since: time.Now(),
		duration: time.Duration(hello.DurationNs), advance: advancePeriod(hello.AdvanceMs),
		advanceBytes: advanceSize(hello.AdvanceBytes),
		heartbeat:    time.Duration(hello.HeartbeatMs) * time.Millisecond, wake: make(chan struct{}, 1),
	}
	giveUp := time.NewTimer(tracerFreeWait)
	defer giveUp.Stop()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, refusal{errorMsg: errorMsg{errCodeClosing, "the service is shutting down"}}
		}
		h := s.hub
		if h != nil && !h.isReleased() {
			why, ok := h.join(c)
			if ok {
				if why.Code == "" {
					s.nextID++
					c.id = s.nextID
					if c.joined && canForceBoundaries {
						go forceBoundary() // the joiner's stream starts at the next generation
					}
					s.mu.Unlock()
					return c, refusal{}
				}
				s.mu.Unlock()
				return nil, why
			}
			s.mu.Unlock()
			// The trace is stopping: wait for it to be over.
			select {
			case <-h.released:
				continue
			case <-giveUp.C:
				return nil, refusal{errorMsg: errorMsg{errCodeBusy, fmt.Sprintf("busy: the previous trace is still stopping after %s "+
					"(its consumers are still taking the rest); try again in a moment", tracerFreeWait)}}
			case <-s.quit:
				return nil, refusal{errorMsg: errorMsg{errCodeClosing, "the service is shutting down"}}
			}
		}
		c, why := s.startTrace(c, hello)
		s.mu.Unlock()
		return c, why
	}
}

// startTrace starts a new run of the tracer for its first consumer; s.mu
// is held.
func (s *Server) startTrace(c *consumer, hello helloMsg) (*consumer, refusal) {
	ring, free, err := allocRing(s.opts.QueueBytes)
	if err != nil {
		return nil, refusal{errorMsg: errorMsg{errCodeResources, fmt.Sprintf("cannot allocate the %s queue: %v", formatBytes(uint64(s.opts.QueueBytes)), err)}}
	}
	h := newHub(s, ring, free)
	h.segment = segmentPeriod(hello.SegmentMs)
	h.add(c)
	h.start = time.Now()
	if err := trace.Start(h); err != nil {
		if ferr := free(); ferr != nil {
			s.logf("releasing the queue's memory: %v", ferr)
		}
		return nil, refusal{errorMsg: errorMsg{errCodeAlreadyTracing, "this process is already being traced by something else (go test -trace, " +
			"/debug/pprof/trace, or another tracing tool): " + err.Error() + "; try again once that trace has ended"}}
	}
	s.hub = h
	s.nextID++
	c.id = s.nextID
	go h.run()
	return c, refusal{}
}

func segmentPeriod(ms int64) time.Duration {
	if ms <= 0 || canForceBoundaries { // Go 1.22+ traces are made of self-contained generations already
		return 0
	}
	return time.Duration(ms) * time.Millisecond // parseHello checked the range
}

func advancePeriod(ms int64) time.Duration {
	if ms <= 0 || !canForceBoundaries {
		return 0
	}
	return time.Duration(ms) * time.Millisecond // parseHello checked the range
}

func advanceSize(n int64) uint64 {
	if n <= 0 || !canForceBoundaries {
		return 0
	}
	return uint64(n) // parseHello checked the range
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
