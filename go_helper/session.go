package livetrace

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Why a session ended, as sent in the end frame.
const (
	reasonClientStop       = "client-stop"
	reasonClientDisconnect = "client-disconnect"
	reasonDuration         = "duration"
	reasonServiceClosing   = "service-closing"
	reasonOverflow         = "overflow"
	reasonRestartFailed    = "segment-restart-failed"
)

type session struct {
	srv    *Server
	id     uint64
	conn   net.Conn
	peer   string
	client string
	since  time.Time
	q      *queue
	// freeRing returns the queue's memory once nothing can touch it.
	freeRing func() error
	// lastSent is when the latest frame went out, as time since since.
	lastSent atomic.Int64

	stopOnce sync.Once
	stopped  chan struct{}
	reason   string
	done     chan struct{}

	mu                  sync.Mutex
	sentChunks, sentLen uint64
}

func (s *session) requestStop(reason string) {
	s.stopOnce.Do(func() {
		s.reason = reason
		close(s.stopped)
	})
}

// run owns the tracer from trace.Start to trace.Stop. Every way a session
// can end goes through requestStop, and every one of them stops the tracer
// and drains it, so the next session finds tracing off.
func (s *session) run(hello helloMsg) {
	defer close(s.done)
	defer s.srv.release(s)
	defer closeQuietly(s.conn)

	start := time.Now()
	if err := trace.Start(s.q); err != nil {
		s.free()
		s.srv.logf("refused %s: the process is already being traced (%v)", s.describe(), err)
		s.setWriteDeadline(time.Now().Add(controlWriteTimeout))
		if werr := writeJSONFrame(s.conn, frameError, errorMsg{errCodeAlreadyTracing,
			"this process is already being traced by something else (go test -trace, /debug/pprof/trace, " +
				"or another tracing tool): " + err.Error() + "; try again once that trace has ended"}); werr != nil && !isGone(werr) {
			s.warn("sending the already-tracing error", werr)
		}
		return
	}
	s.srv.logf("session %d started for %s", s.id, s.describe())
	advance := advancePeriod(hello.AdvanceMs)
	segment := segmentPeriod(hello.SegmentMs)
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	hs := handshakeMsg{
		Protocol: protocolMaxVersion, Helper: HelperVersion, GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, PID: os.Getpid(), Executable: exe,
		GOMAXPROCS: runtime.GOMAXPROCS(0), StartUnixNs: start.UnixNano(), QueueBytes: len(s.q.buf), Session: s.id,
		AdvanceMs: advance.Milliseconds(), SegmentMs: segment.Milliseconds(),
	}
	s.setWriteDeadline(time.Now().Add(controlWriteTimeout))
	if err := writeJSONFrame(s.conn, frameHandshake, hs); err != nil {
		s.requestStop(reasonClientDisconnect)
	}
	s.markSent()
	s.setWriteDeadline(time.Time{})
	go s.readControl()
	if hello.DurationNs > 0 {
		t := time.AfterFunc(time.Duration(hello.DurationNs), func() { s.requestStop(reasonDuration) })
		defer t.Stop()
	}
	sent := make(chan bool, 1)
	go func() { sent <- s.send() }()
	advancing := make(chan struct{})
	go s.advance(advance, advancing)
	if hello.HeartbeatMs > 0 {
		quiet := make(chan struct{})
		go s.heartbeat(time.Duration(hello.HeartbeatMs)*time.Millisecond, quiet)
		defer close(quiet)
	}

	tracing := s.cycle(segment)
	<-advancing
	if tracing {
		trace.Stop() // returns once the runtime has handed over the final chunk
	}
	s.q.close()
	delivered := <-sent
	s.free()
	dropped, modern, lost := s.q.stats()
	gone := ""
	if !delivered {
		gone = "; the consumer was gone before the end"
	}
	s.srv.logf("session %d with %s ended (%s) after %s: %s sent, %d chunks (%s) dropped%s",
		s.id, s.describe(), s.reason, time.Since(start).Round(time.Millisecond), formatBytes(s.sentLen),
		dropped.chunks, formatBytes(dropped.bytes), gone)
	if !delivered {
		return
	}
	end := endMsg{
		Reason: s.reason, Complete: !lost, Chunks: s.sentChunks, Bytes: s.sentLen,
		DroppedChunks: dropped.chunks, DroppedBytes: dropped.bytes, DroppedGenerations: dropped.generations,
	}
	switch {
	case lost:
		end.Detail = "the queue overflowed while the tracer was stopping: the trace is incomplete; raise the queue size"
	case s.reason == reasonRestartFailed:
		end.Detail = "something else started tracing the process between two segments, so the session ended; the segments sent are complete"
	case s.reason == reasonOverflow:
		end.Detail = "the consumer fell behind and the queue filled, so the trace was stopped early (legacy Go traces cannot shed data)"
	case modern && dropped.generations > 0:
		end.Detail = "the consumer fell behind: whole generations were shed (see the gap frames)"
	}
	s.setWriteDeadline(time.Now().Add(controlWriteTimeout))
	if err := writeJSONFrame(s.conn, frameEnd, end); err != nil {
		s.warn("sending the end frame", err)
	}
}

// free returns the queue's memory.
func (s *session) free() {
	if err := s.freeRing(); err != nil {
		s.warn("releasing the queue's memory", err)
	}
}

func (s *session) warn(what string, err error) {
	s.srv.logf("session %d: %s: %v", s.id, what, err)
}

func (s *session) setWriteDeadline(t time.Time) {
	if err := s.conn.SetWriteDeadline(t); err != nil && !errors.Is(err, net.ErrClosed) {
		s.warn("setting the write deadline", err)
	}
}

func (s *session) markSent() { s.lastSent.Store(int64(time.Since(s.since))) }

// heartbeat has the sender send a heartbeat frame whenever nothing else
// went out for period, until quiet is closed. It only ever adds a frame to
// an empty queue, so it neither waits for the consumer nor holds up data.
func (s *session) heartbeat(period time.Duration, quiet <-chan struct{}) {
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-quiet:
			return
		case <-t.C:
		}
		idle := time.Since(s.since) - time.Duration(s.lastSent.Load())
		if idle >= period {
			s.q.heartbeat()
			idle = 0
		}
		t.Reset(period - idle)
	}
}

func segmentPeriod(ms int64) time.Duration {
	if ms <= 0 || canForceBoundaries { // Go 1.22+ traces are made of self-contained generations already
		return 0
	}
	return time.Duration(ms) * time.Millisecond // parseHello checked the range
}

// cycle waits for the session to stop; with a segment period, it stops and
// restarts the trace that often meanwhile, so that every segment is a
// complete legacy trace (StopTrace flushes every buffer and the footer).
// It reports whether the session's trace is still running.
func (s *session) cycle(period time.Duration) bool {
	if period == 0 {
		<-s.stopped
		return true
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for n := uint64(1); ; n++ {
		select {
		case <-s.stopped:
			return true
		case <-t.C:
		}
		trace.Stop()
		s.q.endSegment(segmentMsg{Segment: n, StopUnixNs: time.Now().UnixNano()})
		if err := trace.Start(s.q); err != nil {
			// Something else started tracing in the moment it was off.
			s.srv.logf("session %d: could not restart the trace for the next segment: %v", s.id, err)
			s.requestStop(reasonRestartFailed)
			return false
		}
	}
}

func advancePeriod(ms int64) time.Duration {
	if ms <= 0 || !canForceBoundaries {
		return 0
	}
	return time.Duration(ms) * time.Millisecond // parseHello checked the range
}

// advance closes a generation every period until the session stops.
func (s *session) advance(period time.Duration, done chan<- struct{}) {
	defer close(done)
	if period == 0 {
		<-s.stopped
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.stopped:
			return
		case <-t.C:
			forceBoundary()
		}
	}
}

// send writes queued records until the queue is closed and empty. It keeps
// draining after the consumer is gone so the tracer never waits for it, and
// reports whether everything was delivered.
func (s *session) send() bool {
	ok := true
	var hdr [frameHeaderSize + chunkHeaderSize]byte
	for {
		r, data, more := s.q.next()
		if !more {
			return ok
		}
		if ok {
			s.setWriteDeadline(time.Now().Add(s.srv.opts.WriteTimeout))
			var err error
			switch r.kind {
			case recChunk:
				h := frameHeader(hdr[:0], frameChunk, chunkHeaderSize+len(data))
				h = binary.BigEndian.AppendUint64(h, r.seq)
				h = binary.BigEndian.AppendUint64(h, uint64(r.unixNano))
				h = binary.BigEndian.AppendUint64(h, r.gen)
				bufs := net.Buffers{h, data}
				_, err = bufs.WriteTo(s.conn)
			case recGap:
				err = writeJSONFrame(s.conn, frameGap, r.gap)
			case recSegment:
				err = writeJSONFrame(s.conn, frameSegment, r.segment)
			case recHeartbeat:
				_, err = s.conn.Write(frameHeader(hdr[:0], frameHeartbeat, 0))
			}
			if err != nil {
				ok = false
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					s.srv.logf("session %d: the consumer accepted nothing for %s; disconnecting it", s.id, s.srv.opts.WriteTimeout)
				}
				s.requestStop(reasonClientDisconnect)
			} else {
				s.markSent()
				if r.kind == recChunk {
					s.mu.Lock()
					s.sentChunks++
					s.sentLen += uint64(len(data))
					s.mu.Unlock()
				}
			}
		}
		s.q.done()
	}
}

// readControl turns client frames, and the client's going away, into stop
// requests. It ends when the session closes the connection.
func (s *session) readControl() {
	for {
		typ, _, err := readFrame(s.conn)
		if err != nil {
			s.requestStop(reasonClientDisconnect)
			return
		}
		if typ == frameStop {
			s.requestStop(reasonClientStop)
		}
	}
}

func (s *session) describe() string {
	if s.client == "" {
		return s.peer
	}
	return quote(s.client) + " at " + s.peer
}

func (s *session) status() *SessionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped, _, _ := s.q.stats()
	return &SessionStatus{
		ID: s.id, Peer: s.peer, Client: s.client, Since: s.since,
		SentChunks: s.sentChunks, SentBytes: s.sentLen,
		DroppedChunks: dropped.chunks, DroppedBytes: dropped.bytes, DroppedGenerations: dropped.generations,
	}
}
