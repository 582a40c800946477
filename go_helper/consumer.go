package livetrace

import (
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Why a consumer's stream ended, as sent in its end frame.
const (
	reasonClientStop       = "client-stop"
	reasonClientDisconnect = "client-disconnect"
	reasonDuration         = "duration"
	reasonServiceClosing   = "service-closing"
	reasonOverflow         = "overflow"
	reasonRestartFailed    = "segment-restart-failed"
	reasonFellBehind       = "fell-behind"
)

// A consumer is one connection reading the shared trace: its own options,
// its own position in the ring, its own losses.
type consumer struct {
	srv      *Server
	hub      *hub
	id       uint64
	conn     net.Conn
	peer     string
	client   string
	since    time.Time
	duration time.Duration
	advance  time.Duration // generation period asked for; 0: the runtime's
	// advanceBytes is the generation size asked for; 0: no limit.
	advanceBytes uint64
	heartbeat    time.Duration
	wake         chan struct{} // a record may be waiting

	// Guarded by hub.mu.
	next                   uint64 // the next record to read
	joined                 bool   // attached to a trace already running
	needHeader             bool   // send the kept copy of the trace header first
	firstGen, firstSegment uint64 // where a joiner's stream starts
	waitSegment            bool   // legacy joiner: skip to the next segment
	skipping               bool   // modern: skip to the first chunk after skipGen
	skipGen                uint64
	gap                    *gapMsg // generations being shed, sent when the stream resumes
	ending                 bool    // ends at the next boundary (endAfterGen, or a segment)
	endAfterGen            uint64
	fellBehind, lost       bool
	reason                 string
	sentGen                uint64
	sentChunks, sentBytes  uint64
	dropped                dropStats
}

type dropStats struct {
	chunks, bytes, generations uint64
}

func (c *consumer) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *consumer) sent(n int, gen uint64) {
	c.sentChunks++
	c.sentBytes += uint64(n)
	if gen != 0 {
		c.sentGen = gen
	}
}

// serve runs the consumer's session from the handshake to the end frame.
func (c *consumer) serve() {
	defer closeQuietly(c.conn)
	h := c.hub
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	h.mu.Lock()
	hs := handshakeMsg{
		Protocol: protocolMaxVersion, Helper: HelperVersion, GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, PID: os.Getpid(), Executable: exe,
		GOMAXPROCS: runtime.GOMAXPROCS(0), StartUnixNs: h.start.UnixNano(), QueueBytes: len(h.buf), Session: c.id,
		SegmentMs: h.segment.Milliseconds(), JoinedRunning: c.joined, FirstGeneration: c.firstGen, FirstSegment: c.firstSegment,
	}
	h.mu.Unlock()
	hs.AdvanceMs = h.advanceMs()
	hs.AdvanceBytes = int64(h.advanceSize())
	how := "started the trace"
	switch {
	case c.firstGen > 0:
		how = "joined the running trace from generation " + strconv.FormatUint(c.firstGen, 10)
	case c.firstSegment > 0:
		how = "joined the running trace from segment " + strconv.FormatUint(c.firstSegment, 10)
	}
	c.srv.logf("session %d started for %s (%s)", c.id, c.describe(), how)
	c.setWriteDeadline(time.Now().Add(controlWriteTimeout))
	delivered := writeJSONFrame(c.conn, frameHandshake, hs) == nil
	if delivered {
		go c.readControl()
		if c.duration > 0 {
			t := time.AfterFunc(c.duration, func() { h.requestStop(c, reasonDuration) })
			defer t.Stop()
		}
		delivered = c.send()
	}

	h.mu.Lock()
	if !delivered {
		h.setReason(c, reasonClientDisconnect)
	} else if c.reason == "" {
		h.setReason(c, h.stopReason)
	}
	end := endMsg{
		Reason: c.reason, Complete: !c.lost && !c.fellBehind, Chunks: c.sentChunks, Bytes: c.sentBytes,
		DroppedChunks: c.dropped.chunks, DroppedBytes: c.dropped.bytes, DroppedGenerations: c.dropped.generations,
	}
	others := h.attached - 1
	h.mu.Unlock()
	switch {
	case c.fellBehind:
		end.Detail = "this consumer fell behind: its unread data passed three quarters of the queue it shares with " +
			plural(others, "other consumer", "other consumers") + ", so its stream was ended early and its trace is " +
			"incomplete (legacy Go traces cannot shed data); the others go on"
	case c.lost:
		end.Detail = "the queue overflowed while the tracer was stopping: the trace is incomplete; raise the queue size"
	case end.Reason == reasonRestartFailed:
		end.Detail = "something else started tracing the process between two segments, so the session ended; the segments sent are complete"
	case end.Reason == reasonOverflow:
		end.Detail = "the consumer fell behind and the queue filled, so the trace was stopped early (legacy Go traces cannot shed data)"
	case end.DroppedGenerations > 0:
		end.Detail = "the consumer fell behind: whole generations were shed (see the gap frames)"
	}
	if delivered {
		c.setWriteDeadline(time.Now().Add(controlWriteTimeout))
		if err := writeJSONFrame(c.conn, frameEnd, end); err != nil && !isGone(err) {
			c.warn("sending the end frame", err)
		}
	}
	gone := ""
	if !delivered {
		gone = "; the consumer was gone before the end"
	}
	c.srv.logf("session %d with %s ended (%s) after %s: %s sent, %d chunks (%s) dropped%s",
		c.id, c.describe(), end.Reason, time.Since(c.since).Round(time.Millisecond), formatBytes(end.Bytes),
		end.DroppedChunks, formatBytes(end.DroppedBytes), gone)
	h.leave(c)
}

// send writes the consumer's frames as the ring gets them, with a
// heartbeat whenever nothing else went out for the period asked for. It
// reports whether the stream reached its end with the consumer there.
func (c *consumer) send() bool {
	h := c.hub
	buf := make([]byte, 0, 2*batchBytes)
	var beat <-chan time.Time
	var hb *time.Timer
	if c.heartbeat > 0 {
		hb = time.NewTimer(c.heartbeat)
		defer hb.Stop()
		beat = hb.C
	}
	for {
		h.mu.Lock()
		out, done := h.take(c, buf[:0])
		h.mu.Unlock()
		buf = out[:0]
		if len(out) > 0 {
			if !c.write(out) {
				return false
			}
			if hb != nil {
				resetTimer(hb, c.heartbeat)
			}
		}
		if done {
			return true
		}
		if len(out) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-beat:
			if !c.write(frameHeader(buf[:0], frameHeartbeat, 0)) {
				return false
			}
			hb.Reset(c.heartbeat)
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

func (c *consumer) write(b []byte) bool {
	c.setWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
	if _, err := c.conn.Write(b); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.srv.logf("session %d: the consumer accepted nothing for %s; disconnecting it", c.id, c.srv.opts.WriteTimeout)
		}
		return false
	}
	return true
}

// readControl turns client frames, and the client's going away, into stop
// requests. It ends when the session closes the connection.
func (c *consumer) readControl() {
	for {
		typ, _, err := readFrame(c.conn)
		if err != nil {
			c.hub.requestStop(c, reasonClientDisconnect)
			return
		}
		if typ == frameStop {
			c.hub.requestStop(c, reasonClientStop)
		}
	}
}

func (c *consumer) warn(what string, err error) {
	c.srv.logf("session %d: %s: %v", c.id, what, err)
}

func (c *consumer) setWriteDeadline(t time.Time) {
	if err := c.conn.SetWriteDeadline(t); err != nil && !errors.Is(err, net.ErrClosed) {
		c.warn("setting the write deadline", err)
	}
}

func (c *consumer) describe() string {
	if c.client == "" {
		return c.peer
	}
	return quote(c.client) + " at " + c.peer
}

// statusLocked describes the consumer; hub.mu must be held.
func (c *consumer) statusLocked() SessionStatus {
	return SessionStatus{
		ID: c.id, Peer: c.peer, Client: c.client, Since: c.since, Joined: c.joined, Ending: c.ending || c.reason != "",
		SentChunks: c.sentChunks, SentBytes: c.sentBytes,
		DroppedChunks: c.dropped.chunks, DroppedBytes: c.dropped.bytes, DroppedGenerations: c.dropped.generations,
	}
}
