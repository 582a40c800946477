package livetrace

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// handle runs the handshake and, if the client is let in, the session.
func (s *Server) handle(conn net.Conn) {
	sess, hello := s.admit(conn)
	s.endHandshake()
	if sess == nil {
		return
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		sess.warn("clearing the handshake deadline", err)
	}
	sess.run(hello)
}

// admit reads the client's preamble and HELLO and claims the session slot
// for it, or refuses it and closes the connection.
func (s *Server) admit(conn net.Conn) (*session, helloMsg) {
	peer := peerName(conn, s.addr)
	deadline := time.Now().Add(s.opts.HandshakeTimeout)
	if err := conn.SetDeadline(deadline); err != nil {
		closeQuietly(conn)
		return nil, helloMsg{}
	}
	// A client that goes away or falls silent during the handshake is not
	// worth a log line: it has been told nothing and taken nothing.
	if _, err := conn.Write(preamble()); err != nil {
		closeQuietly(conn)
		return nil, helloMsg{}
	}
	lo, hi, err := readPreamble(conn)
	if err != nil {
		closeQuietly(conn)
		return nil, helloMsg{}
	}
	if hi < protocolMinVersion || lo > protocolMaxVersion {
		s.refuseHandshake(conn, peer, errCodeVersion, fmt.Sprintf("this helper speaks livetrace protocol versions %d to %d and the client %d to %d; upgrade the older side",
			protocolMinVersion, protocolMaxVersion, lo, hi))
		return nil, helloMsg{}
	}
	typ, body, err := readFrame(conn)
	var tooLarge frameTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		s.refuseHandshake(conn, peer, errCodeBadRequest, "malformed hello: "+err.Error())
		return nil, helloMsg{}
	case err != nil:
		closeQuietly(conn)
		return nil, helloMsg{}
	case typ != frameHello:
		s.refuseHandshake(conn, peer, errCodeBadRequest, fmt.Sprintf("expected a hello frame, got frame type %#x", typ))
		return nil, helloMsg{}
	}
	hello, err := parseHello(body)
	if err != nil {
		s.refuseHandshake(conn, peer, errCodeBadRequest, err.Error())
		return nil, helloMsg{}
	}
	if s.opts.Token != "" {
		ok, answered := s.gate.check(hello.Token, s.opts.Token, deadline)
		if !answered {
			closeQuietly(conn)
			return nil, helloMsg{}
		}
		if !ok {
			// Guesses are summarised, not logged one by one: a guesser must
			// not be able to flood the service's log.
			s.refusedTokens.add(peer)
			msg := "wrong token"
			if hello.Token == "" {
				msg = "this service requires a token: pass the value of its LIVETRACE_TOKEN"
			}
			s.sendRefusal(conn, peer, errCodeUnauthorized, msg)
			return nil, helloMsg{}
		}
	}
	sess, why := s.acquire(conn, peer, hello.Client)
	if sess == nil {
		s.refuse(conn, peer, why.Code, why.Message)
		return nil, helloMsg{}
	}
	return sess, hello
}

// refuse logs a refusal, tells the client why and closes the connection.
func (s *Server) refuse(conn net.Conn, peer, code, msg string) {
	s.logf("refused %s: %s", peer, msg)
	s.sendRefusal(conn, peer, code, msg)
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

// The delay after a wrong token: doubling from the first to the last with
// every failure in a row, back to none after a right token.
var (
	tokenDelayFirst = 50 * time.Millisecond
	tokenDelayMax   = 2 * time.Second
)

// tokenGate answers token checks one at a time, each after the delay the
// failures before it earned, so that guessing is slow however many
// connections a guesser opens (there are at most MaxHandshakes waiting).
type tokenGate struct {
	turn chan struct{}
	// Only the holder of turn touches these.
	delay     time.Duration
	notBefore time.Time
}

func newTokenGate() tokenGate { return tokenGate{turn: make(chan struct{}, 1)} }

// check compares got with want in constant time (hashing both first, so
// that not even the length is revealed). answered is false when the check
// could not be made before deadline.
func (g *tokenGate) check(got, want string, deadline time.Time) (ok, answered bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case g.turn <- struct{}{}:
	case <-t.C:
		return false, false
	}
	defer func() { <-g.turn }()
	if wait := time.Until(g.notBefore); wait > 0 {
		if g.notBefore.After(deadline) {
			return false, false
		}
		time.Sleep(wait)
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(a[:], b[:]) == 1 {
		g.delay, g.notBefore = 0, time.Time{}
		return true, true
	}
	if g.delay == 0 {
		g.delay = tokenDelayFirst
	} else if g.delay *= 2; g.delay > tokenDelayMax {
		g.delay = tokenDelayMax
	}
	g.notBefore = time.Now().Add(g.delay)
	return false, true
}
