package livetrace

import (
	"crypto/subtle"
	"encoding/json"
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
	handshakeTimeout    = 10 * time.Second
	closeGrace          = 5 * time.Second
)

// Options configure a Server. Zero fields take their defaults, or the
// environment's LIVETRACE_TOKEN and LIVETRACE_QUEUE_MB.
type Options struct {
	// QueueBytes caps the memory holding trace data the consumer has not
	// taken yet (at least 1 MiB).
	QueueBytes int
	// Token, when set, must be presented by every client.
	Token string
	// WriteTimeout bounds how long a consumer may take no data at all.
	WriteTimeout time.Duration
	// Logf receives one line per session start, end and refusal; nil logs
	// through the standard log package.
	Logf func(format string, args ...any)
}

// Server accepts livetrace consumers and serves one trace session at a time.
type Server struct {
	opts    Options
	ln      net.Listener
	cleanup func()
	addr    string

	mu     sync.Mutex
	cur    *session
	closed bool
	nextID uint64
	accept chan struct{}
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

// Serve listens on addr (unix:/path, tcp:HOST:PORT, or tcp:PORT for
// loopback) with default options.
func Serve(addr string) (*Server, error) {
	return ServeWithOptions(addr, Options{})
}

// ServeWithOptions listens on addr with the given options.
func ServeWithOptions(addr string, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	ln, cleanup, err := listen(addr)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, ln: ln, cleanup: cleanup, addr: addr, accept: make(chan struct{})}
	if ln.Addr().Network() == "tcp" {
		s.addr = "tcp:" + ln.Addr().String()
	}
	go s.serve()
	return s, nil
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
				return fmt.Errorf("livetrace: LIVETRACE_QUEUE_MB=%q is not a positive whole number of MiB", v)
			}
			o.QueueBytes = mb << 20
		}
	}
	if o.QueueBytes < minQueueBytes {
		return fmt.Errorf("livetrace: a queue of %d bytes is too small; use at least %d", o.QueueBytes, minQueueBytes)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
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
// the unix socket.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
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
			cur.conn.SetDeadline(time.Now())
			<-cur.done
		}
	}
	return err
}

func (s *Server) serve() {
	defer close(s.accept)
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go s.handle(conn)
	}
}

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }

// handle runs the handshake and, if the client is let in, the session.
func (s *Server) handle(conn net.Conn) {
	peer := conn.RemoteAddr().String()
	if peer == "" || peer == "@" {
		peer = "unix socket " + s.addr
	}
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := conn.Write(preamble()); err != nil {
		conn.Close()
		return
	}
	refuse := func(code, msg string) {
		s.logf("refused %s: %s", peer, msg)
		writeJSONFrame(conn, frameError, errorMsg{code, msg})
		conn.Close()
	}
	lo, hi, err := readPreamble(conn)
	if err != nil {
		conn.Close()
		return
	}
	if hi < protocolMinVersion || lo > protocolMaxVersion {
		refuse(errCodeVersion, fmt.Sprintf("this helper speaks livetrace protocol versions %d to %d and the client %d to %d; upgrade the older side",
			protocolMinVersion, protocolMaxVersion, lo, hi))
		return
	}
	typ, body, err := readFrame(conn)
	if err != nil {
		conn.Close()
		return
	}
	var hello helloMsg
	if typ != frameHello {
		refuse(errCodeBadRequest, fmt.Sprintf("expected a hello frame, got frame type %#x", typ))
		return
	}
	if err := json.Unmarshal(body, &hello); err != nil {
		refuse(errCodeBadRequest, "malformed hello: "+err.Error())
		return
	}
	if s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(hello.Token), []byte(s.opts.Token)) != 1 {
		if hello.Token == "" {
			refuse(errCodeUnauthorized, "this service requires a token: pass the value of its LIVETRACE_TOKEN")
		} else {
			refuse(errCodeUnauthorized, "wrong token")
		}
		return
	}
	sess, why := s.acquire(conn, peer, hello.Client)
	if sess == nil {
		refuse(why.Code, why.Message)
		return
	}
	conn.SetDeadline(time.Time{})
	s.logf("session %d started for %s", sess.id, sess.describe())
	sess.run(hello)
}

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
