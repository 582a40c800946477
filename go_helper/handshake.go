package livetrace

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// handle runs the handshake and, if the client is let in, the session.
func (s *Server) handle(conn net.Conn) {
	c := s.admit(conn)
	s.endHandshake()
	if c == nil {
		return
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		c.warn("clearing the handshake deadline", err)
	}
	c.serve()
}

// admit reads the client's preamble and HELLO and attaches it to the
// shared trace, or refuses it and closes the connection.
func (s *Server) admit(conn net.Conn) *consumer {
	peer := peerName(conn, s.addr)
	deadline := time.Now().Add(s.opts.HandshakeTimeout)
	if err := conn.SetDeadline(deadline); err != nil {
		closeQuietly(conn)
		return nil
	}
	// A client that goes away or falls silent during the handshake is not
	// worth a log line: it has been told nothing and taken nothing.
	if _, err := conn.Write(preamble()); err != nil {
		closeQuietly(conn)
		return nil
	}
	lo, hi, err := readPreamble(conn)
	if err != nil {
		closeQuietly(conn)
		return nil
	}
	if hi < protocolMinVersion || lo > protocolMaxVersion {
		s.refuseHandshake(conn, peer, errCodeVersion, fmt.Sprintf("this helper speaks livetrace protocol versions %d to %d and the client %d to %d; upgrade the older side",
			protocolMinVersion, protocolMaxVersion, lo, hi))
		return nil
	}
	typ, body, err := readFrame(conn)
	var tooLarge frameTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		s.refuseHandshake(conn, peer, errCodeBadRequest, "malformed hello: "+err.Error())
		return nil
	case err != nil:
		closeQuietly(conn)
		return nil
	case typ != frameHello:
		s.refuseHandshake(conn, peer, errCodeBadRequest, fmt.Sprintf("expected a hello frame, got frame type %#x", typ))
		return nil
	}
	hello, err := parseHello(body)
	if err != nil {
		s.refuseHandshake(conn, peer, errCodeBadRequest, err.Error())
		return nil
	}
	if s.opts.Token != "" {
		if ok, wait := s.gate.check(hello.Token, s.opts.Token, time.Now()); !ok {
			if !s.holdRefusal(wait, deadline) {
				closeQuietly(conn)
				return nil
			}
			// Guesses are summarised, not logged one by one: a guesser must
			// not be able to flood the service's log.
			s.refusedTokens.add(peer)
			msg := "wrong token"
			if hello.Token == "" {
				msg = "this service requires a token: pass the value of its LIVETRACE_TOKEN"
			}
			s.sendRefusal(conn, peer, errCodeUnauthorized, msg)
			return nil
		}
	}
	c, why := s.attach(conn, peer, hello)
	if c == nil {
		if why.Code != "" {
			s.refusedSessions.add(peer + ": " + why.Message)
			s.sendRefusal(conn, peer, why.Code, why.Message)
		}
		return nil
	}
	return c
}

// refuseHandshake refuses a client whose preamble or HELLO the helper will
// not serve. Like token guesses these are summarised, not logged one by one:
// anyone who can connect could otherwise write to the service's log as fast
// as it can reconnect. The message names only fixed text and numbers.
func (s *Server) refuseHandshake(conn net.Conn, peer, code, msg string) {
	s.refusedHandshakes.add(peer + ": " + msg)
	s.sendRefusal(conn, peer, code, msg)
}

func (s *Server) sendRefusal(conn net.Conn, peer, code, msg string) {
	if err := writeJSONFrame(conn, frameError, errorMsg{code, msg}); err != nil && !isGone(err) {
		s.logf("could not tell %s why it was refused: %v", peer, err)
	}
	closeQuietly(conn)
}

// isGone reports errors that only mean the peer or the connection is gone.
func isGone(err error) bool {
	var ne net.Error
	return errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout()) || isConnReset(err)
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// holdRefusal keeps a connection with a wrong or missing token for wait
// before it is answered. It is false when the answer would come after the
// handshake deadline (the connection is then closed at the deadline, not
// before, so that the close tells the guesser nothing sooner) or when the
// server closes meanwhile.
//
// The connection keeps its handshake slot all that time, even if the
// guesser hangs up: a right token is answered at once, so the lack of a
// prompt answer is itself the verdict, and holding the slot is what bounds
// the guessing. With at most MaxHandshakes connections in their handshake,
// at most MaxHandshakes guesses are made per delay (2 s once guessing goes
// on). The sleep is this connection's alone: other clients' checks, the
// refusal of connections over the cap and the session in progress never
// wait for it.
func (s *Server) holdRefusal(wait time.Duration, deadline time.Time) bool {
	answer := true
	if left := time.Until(deadline); wait > left {
		wait, answer = left, false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return answer
	case <-s.quit:
		return false
	}
}

// The delay before a wrong or missing token is refused: the first of a
// streak waits tokenDelayFirst, each one after it twice as long as the one
// before, up to tokenDelayMax. A streak ends once tokenQuiet has passed with
// no refusal waiting. A right token does not end it: a legitimate client
// connecting among guessers would otherwise hand them the short delay back.
var (
	tokenDelayFirst = 50 * time.Millisecond
	tokenDelayMax   = 2 * time.Second
	tokenQuiet      = 10 * time.Second
)

// tokenGate decides how long each wrong token waits. It does not serialise
// the checks: each is made at once, so that a right token is never queued
// behind guesses; each wrong one then waits on its own (holdRefusal).
type tokenGate struct {
	mu      sync.Mutex
	streak  int       // wrong tokens in the current streak
	quietAt time.Time // when the last refusal of the streak is due
}

func newTokenGate() tokenGate { return tokenGate{} }

// check compares got with want in constant time (hashing both first, so
// that not even the length is revealed). A wrong token is told how long to
// wait before its refusal.
func (g *tokenGate) check(got, want string, now time.Time) (ok bool, wait time.Duration) {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(a[:], b[:]) == 1 {
		return true, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.quietAt) >= tokenQuiet {
		g.streak = 0
	}
	g.streak++
	wait = tokenDelayFirst
	for i := 1; i < g.streak && wait < tokenDelayMax; i++ {
		wait *= 2
	}
	if wait > tokenDelayMax {
		wait = tokenDelayMax
	}
	if due := now.Add(wait); due.After(g.quietAt) {
		g.quietAt = due
	}
	return false, wait
}
