package livetrace

import (
	"errors"
	"net"
	"time"
)

// Backoff after a failed accept, as net/http does: out of file descriptors
// or memory is a state the process may leave, and the service must stay
// traceable once it has.
const (
	acceptDelayFirst = 5 * time.Millisecond
	acceptDelayMax   = time.Second
)

// serve accepts connections until the server closes. Every accept error
// other than the listener closing is retried with a growing delay.
func (s *Server) serve() {
	defer close(s.accept)
	var delay time.Duration
	failures := 0
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			if failures == 0 {
				s.logf("accepting consumers failed: %v; retrying with backoff", err)
			}
			failures++
			if delay == 0 {
				delay = acceptDelayFirst
			} else if delay *= 2; delay > acceptDelayMax {
				delay = acceptDelayMax
			}
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return
			}
			continue
		}
		if failures > 0 {
			s.logf("accepting consumers again after %s", plural(failures, "failed attempt", "failed attempts"))
			failures, delay = 0, 0
		}
		if !s.startHandshake() {
			s.excess.add(peerName(conn, s.addr))
			closeQuietly(conn)
			continue
		}
		go s.handle(conn)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// startHandshake counts a connection into its handshake, unless too many
// are there already: a client that connects and says nothing holds a file
// descriptor until its handshake times out.
func (s *Server) startHandshake() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending >= s.opts.MaxHandshakes {
		return false
	}
	s.pending++
	return true
}

func (s *Server) endHandshake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
}

// peerName says who is at the other end, for logs and busy messages.
func peerName(conn net.Conn, addr string) string {
	if ra := conn.RemoteAddr(); ra != nil && ra.Network() != "unix" && ra.String() != "" {
		return ra.String()
	}
	return "unix socket " + addr
}

// closeQuietly closes a connection being given up on: the only failure is
// that it is closed already, which is what is wanted.
func closeQuietly(c net.Conn) {
	_ = c.Close()
}
