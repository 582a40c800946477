package livetrace

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestSessionFromHelloToStop(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	hs := c.start(map[string]any{"client": "unit test"})
	if hs.Protocol != protocolMaxVersion || hs.Helper != HelperVersion || hs.PID != os.Getpid() ||
		hs.Session != 1 || hs.QueueBytes != 4<<20 || hs.GOMAXPROCS < 1 || hs.StartUnixNs == 0 {
		t.Fatalf("handshake %+v", hs)
	}
	st := s.Status()
	if len(st) != 1 || st[0].ID != 1 || st[0].Client != "unit test" || st[0].Joined || !trace.IsEnabled() {
		t.Fatalf("status %+v while tracing=%v", st, trace.IsEnabled())
	}
	c.send(frameStop, nil)
	got := c.untilEnd()
	end := got.end
	if end.Reason != reasonClientStop || !end.Complete || end.Chunks != uint64(len(got.chunks)) || end.Chunks == 0 {
		t.Fatalf("end %+v after %d chunks", end, len(got.chunks))
	}
	if !bytes.HasPrefix(got.chunks[0], []byte("go 1.")) {
		t.Fatalf("the first chunk is not a trace header: %q", got.chunks[0][:16])
	}
	for i, seq := range got.seqs {
		if seq != uint64(i+1) {
			t.Fatalf("chunk %d has sequence number %d", i, seq)
		}
	}
	if got.heartbeats != 0 {
		t.Fatalf("%d heartbeats nobody asked for", got.heartbeats)
	}
	waitIdle(t, s)
	if len(book.matching(`session 1 started for "unit test" at 127.0.0.1:`)) != 1 ||
		len(book.matching("session 1 with")) != 1 {
		t.Fatalf("log:\n%s", book)
	}
}

func TestDurationEndsTheSession(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	c.start(map[string]any{"duration_ns": int64(50 * time.Millisecond)})
	if end := c.untilEnd().end; end.Reason != reasonDuration || !end.Complete {
		t.Fatalf("end %+v", end)
	}
	waitIdle(t, s)
	// The slot is free again, and session numbers go on counting.
	c = dial(t, s)
	if hs := c.start(map[string]any{"duration_ns": 1}); hs.Session != 2 {
		t.Fatalf("second session numbered %d", hs.Session)
	}
	c.untilEnd()
}

func TestClientDisconnectStopsTheTracer(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	c.start(nil)
	if err := c.conn.Close(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	eventually(t, "the end of the session logged", func() bool {
		return len(book.matching("ended (client-disconnect)")) == 1
	})
}

func TestCloseDuringASessionSendsTheRestAndAnEnd(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	c.start(nil)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		closeServer(t, s)
	}()
	got := c.untilEnd()
	if got.end.Reason != reasonServiceClosing || !got.end.Complete {
		t.Fatalf("end %+v", got.end)
	}
	<-closed
	if trace.IsEnabled() {
		t.Fatal("Close returned with the tracer on")
	}
	if _, err := dialAddr(t, s.Addr()); err == nil {
		t.Fatal("still accepting after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func TestAConsumerPastTheLimitIsBusyAndTheNameIsEscaped(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{MaxConsumers: 1})
	first := dial(t, s)
	name := "first\nlivetrace: session 9 started for root\x1b[31m"
	first.start(map[string]any{"client": name})
	e := dial(t, s).refused(map[string]any{"client": "second"})
	want := `"first\nlivetrace: session 9 started for root\x1b[31m" at 127.0.0.1:`
	if e.Code != errCodeBusy || !strings.Contains(e.Message, want) || strings.ContainsAny(e.Message, "\n\x1b") ||
		!strings.Contains(e.Message, "1 consumer is already attached") {
		t.Fatalf("refusal %+v", e)
	}
	first.send(frameStop, nil)
	first.untilEnd()
	waitIdle(t, s)
	for _, line := range strings.Split(book.String(), "\n") {
		if strings.HasPrefix(line, "livetrace: session 9") {
			t.Fatalf("a client forged a log line:\n%s", book)
		}
	}
	if len(book.matching(want)) < 2 { // the start of the session and the refusal
		t.Fatalf("log:\n%s", book)
	}
}

func TestTheLimitComesFromTheEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("LIVETRACE_MAX_CONSUMERS", "3")
	o := Options{}
	if err := o.fill(); err != nil || o.MaxConsumers != 3 {
		t.Fatalf("MaxConsumers=%d, %v", o.MaxConsumers, err)
	}
	t.Setenv("LIVETRACE_MAX_CONSUMERS", "many")
	o = Options{}
	if err := o.fill(); err == nil || !strings.Contains(err.Error(), "LIVETRACE_MAX_CONSUMERS") {
		t.Fatalf("fill: %v", err)
	}
}

// Two consumers share one trace: the first starts it, a second joins while
// it runs, each ends on its own terms, and the tracer stops with the last.
// A legacy trace is shared in segments, and joined at the next one.
func TestConsumersShareOneTrace(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{})
	first := dial(t, s)
	if canForceBoundaries {
		first.start(map[string]any{"client": "first", "advance_ms": 100})
		// Let the trace get past its header, so that the second one joins it running.
		for n := 0; n < 2; n++ {
			if typ, _ := first.frame(); typ != frameChunk {
				t.Fatalf("frame %#x", typ)
			}
		}
	} else {
		first.start(map[string]any{"client": "first", "segment_ms": 1000})
		for typ, _ := first.frame(); typ != frameSegment; typ, _ = first.frame() {
		}
	}
	second := dial(t, s)
	hs := second.start(map[string]any{"client": "second", "duration_ns": int64(300 * time.Millisecond), "heartbeat_ms": 100})
	if !hs.JoinedRunning || hs.Session != 2 {
		t.Fatalf("joiner's handshake %+v", hs)
	}
	if canForceBoundaries && (hs.FirstGeneration == 0 || hs.AdvanceMs != 100) ||
		!canForceBoundaries && (hs.FirstSegment < 2 || hs.SegmentMs != 1000) {
		t.Fatalf("joiner's handshake %+v", hs)
	}
	got := second.untilEnd()
	if got.end.Reason != reasonDuration || !got.end.Complete || !bytes.HasPrefix(got.chunks[0], []byte("go 1.")) {
		t.Fatalf("joiner's end %+v", got.end)
	}
	if len(got.segments) != 0 {
		t.Fatalf("the joiner's stream has segment ends %+v: it should hold one segment", got.segments)
	}
	if canForceBoundaries {
		gens := map[uint64]bool{}
		for _, c := range got.chunks[1:] {
			gens[chunkGeneration(c, 0)] = true
		}
		if gens[hs.FirstGeneration-1] || !gens[hs.FirstGeneration] {
			t.Fatalf("joiner got generations %v, first announced %d", gens, hs.FirstGeneration)
		}
	}
	if len(s.Status()) != 1 {
		t.Fatalf("the first consumer's session ended with the second (status %+v)", s.Status())
	}
	// In segment mode the tracer is off for a moment at each restart.
	eventually(t, "the first consumer's trace to keep running", trace.IsEnabled)
	first.send(frameStop, nil)
	if end := first.untilEnd().end; end.Reason != reasonClientStop || !end.Complete {
		t.Fatalf("first's end %+v", end)
	}
	waitIdle(t, s)
	if len(book.matching("session 2 started for \"second\"")) != 1 || len(book.matching("joined the running trace")) != 1 {
		t.Fatalf("log:\n%s", book)
	}
}

// A consumer that asks for generations of at most advance_bytes gets them
// closed as they reach it, not only once a second; and the handshake says so.
func TestAGenerationIsClosedAtTheSizeAskedFor(t *testing.T) {
	if !canForceBoundaries {
		t.Skip("only Go 1.22+ traces are made of generations")
	}
	s, _ := serveTest(t, "tcp:0", Options{})
	for n := 0; n < 4; n++ {
		churn(t)
	}
	c := dial(t, s)
	hs := c.start(map[string]any{"advance_bytes": minAdvanceBytes, "duration_ns": int64(1500 * time.Millisecond)})
	if hs.AdvanceBytes != minAdvanceBytes || hs.AdvanceMs != 0 {
		t.Fatalf("handshake %+v", hs)
	}
	got := c.untilEnd()
	size := map[uint64]int{}
	total := 0
	for _, ch := range got.chunks[1:] {
		size[chunkGeneration(ch, 0)] += len(ch)
		total += len(ch)
	}
	// The runtime alone closes one a second (2 here); by size, one every
	// MiB, but never two within minAdvanceMs. A loaded machine's advancer
	// lags (6 of about 15 with the suite on both cores): at least 4.
	want := total / minAdvanceBytes
	if most := 1500 / minAdvanceMs; want > most {
		want = most
	}
	if len(size) < 4 {
		t.Fatalf("%d bytes in %d generations %v; want about %d", total, len(size), size, want)
	}
	waitIdle(t, s)
}

// churn keeps the scheduler busy, so that even a legacy tracer fills and
// hands over buffers, until the test ends.
func churn(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			done := make(chan struct{})
			go func() { close(done) }()
			<-done
		}
	}()
}

func TestALegacyTraceWithoutSegmentsCannotBeJoined(t *testing.T) {
	if canForceBoundaries {
		t.Skip("Go 1.22+ traces can be joined at any generation")
	}
	s, _ := serveTest(t, "tcp:0", Options{})
	first := dial(t, s)
	churn(t)
	first.start(map[string]any{"duration_ns": int64(time.Minute)})
	for n := 0; n < 2; n++ { // past the header
		if typ, _ := first.frame(); typ != frameChunk {
			t.Fatalf("frame %#x", typ)
		}
	}
	e := dial(t, s).refused(nil)
	if e.Code != errCodeLegacyRunning || !strings.Contains(e.Message, "it ends in about") {
		t.Fatalf("refusal %+v", e)
	}
	first.send(frameStop, nil)
	first.untilEnd()
}

// A consumer arriving while the previous trace is still stopping waits
// for it instead of being refused.
func TestAConsumerWaitsForTheTracerToBeFree(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	first := dial(t, s)
	first.start(nil)
	s.mu.Lock()
	h := s.hub
	s.mu.Unlock()
	// Hold the run back from releasing by keeping a member attached while stopping.
	h.mu.Lock()
	h.attached++
	h.mu.Unlock()
	first.send(frameStop, nil)
	first.untilEnd()
	eventually(t, "the trace stopped", func() bool { return !trace.IsEnabled() })
	next := make(chan handshakeMsg, 1)
	c := dial(t, s)
	go func() { next <- c.start(map[string]any{"duration_ns": 1}) }()
	time.Sleep(50 * time.Millisecond)
	h.mu.Lock()
	h.attached--
	h.releaseIfDone()
	h.mu.Unlock()
	if hs := <-next; hs.Session != 2 || hs.JoinedRunning {
		t.Fatalf("handshake %+v", hs)
	}
	if end := c.untilEnd().end; !end.Complete {
		t.Fatalf("end %+v", end)
	}
}

func TestAlreadyTracedProcessIsRefused(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{})
	if err := trace.Start(io.Discard); err != nil {
		t.Fatal(err)
	}
	e := dial(t, s).refused(nil)
	trace.Stop()
	if e.Code != errCodeAlreadyTracing || !strings.Contains(e.Message, "already being traced") {
		t.Fatalf("refusal %+v", e)
	}
	if len(book.matching("already being traced")) != 1 || len(book.matching("started")) != 0 {
		t.Fatalf("log:\n%s", book)
	}
	waitIdle(t, s)
	c := dial(t, s)
	c.start(map[string]any{"duration_ns": 1})
	if end := c.untilEnd().end; !end.Complete {
		t.Fatalf("end %+v", end)
	}
}

func TestVersionRangesThatDoNotMeetAreRefused(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	c.sendPreamble(7, 9)
	c.readPreamble()
	e := c.refusal()
	if e.Code != errCodeVersion || !strings.Contains(e.Message, "versions 1 to 1 and the client 7 to 9") {
		t.Fatalf("refusal %+v", e)
	}
}

func TestStrangersAndBadFirstFrames(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})

	// Not a livetrace client: the helper hangs up without a word.
	c := dial(t, s)
	c.write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	c.readPreamble()
	c.expectClosed()

	c = dial(t, s)
	c.sendPreamble(1, 1)
	c.readPreamble()
	c.send(frameStop, nil)
	if e := c.refusal(); e.Code != errCodeBadRequest || !strings.Contains(e.Message, "expected a hello frame, got frame type 0x2") {
		t.Fatalf("refusal %+v", e)
	}

	c = dial(t, s)
	c.sendPreamble(1, 1)
	c.readPreamble()
	c.write(frameHeader(nil, frameHello, 1<<30))
	if e := c.refusal(); e.Code != errCodeBadRequest || !strings.Contains(e.Message, "exceeds the 65536-byte limit") {
		t.Fatalf("refusal %+v", e)
	}

	c = dial(t, s)
	c.sendPreamble(1, 1)
	c.readPreamble()
	c.send(frameHello, []byte("{nope"))
	if e := c.refusal(); e.Code != errCodeBadRequest || !strings.Contains(e.Message, "malformed hello") {
		t.Fatalf("refusal %+v", e)
	}

	// A preamble cut short, then the client leaves.
	c = dial(t, s)
	c.write([]byte("LIVE"))
	c.readPreamble()
	if err := c.conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if trace.IsEnabled() || s.Status() != nil {
		t.Fatal("junk started a session")
	}
}

func TestSilentClientIsCutOffAfterTheHandshakeTimeout(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{HandshakeTimeout: 50 * time.Millisecond})
	c := dial(t, s)
	c.readPreamble()
	c.expectClosed()
	c = dial(t, s)
	c.sendPreamble(1, 1)
	c.readPreamble()
	c.expectClosed()
}

func TestConnectionsBeyondTheHandshakeCapAreClosedAtOnce(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{MaxHandshakes: 2})
	idle := []*client{dial(t, s), dial(t, s)}
	for _, c := range idle {
		c.readPreamble() // accepted and counted
	}
	extra := dial(t, s)
	extra.expectClosed()
	for _, c := range idle {
		if err := c.conn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Once the idle ones are gone, a client gets its turn again.
	var c *client
	eventually(t, "a connection answered", func() bool {
		conn, err := dialAddr(t, s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c = newClient(t, conn)
		_, _, err = readPreamble(conn)
		return err == nil
	})
	c.sendPreamble(1, 1)
	c.send(frameHello, []byte(`{"duration_ns":1}`))
	if typ, _ := c.frame(); typ != frameHandshake {
		t.Fatalf("frame %#x", typ)
	}
	c.untilEnd()
	closeServer(t, s)
	lines := book.matching("closed unanswered: 2 were already in their handshake")
	if len(lines) == 0 {
		t.Fatalf("log:\n%s", book)
	}
}

// flakyListener fails its first accepts as a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	fail := l.fails > 0
	if fail {
		l.fails--
	}
	l.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func flakyServer(t *testing.T, fails int) (*Server, *logBook) {
	t.Helper()
	cleanEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	book := &logBook{}
	opts := Options{Logf: book.logf, QueueBytes: 4 << 20}
	if err := opts.fill(); err != nil {
		t.Fatal(err)
	}
	s := newServer(&flakyListener{Listener: ln, fails: fails}, func() {}, "tcp:"+ln.Addr().String(), opts)
	go s.serve()
	t.Cleanup(func() { closeServer(t, s) })
	return s, book
}

func TestAcceptErrorsAreRetriedWithBackoff(t *testing.T) {
	s, book := flakyServer(t, 4)
	c := dial(t, s)
	c.start(map[string]any{"duration_ns": 1})
	c.untilEnd()
	if len(book.matching("accepting consumers failed: accept tcp")) != 1 ||
		len(book.matching("too many open files")) != 1 ||
		len(book.matching("accepting consumers again after 4 failed attempts")) != 1 {
		t.Fatalf("log:\n%s", book)
	}
}

func TestCloseEndsTheAcceptBackoff(t *testing.T) {
	s, _ := flakyServer(t, 1<<30)
	time.Sleep(100 * time.Millisecond) // a few rounds of backoff
	done := make(chan struct{})
	go func() {
		closeServer(t, s)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Close hung in the accept backoff")
	}
}

func TestAdvanceAndSegmentPeriods(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	hs := c.start(map[string]any{"advance_ms": 100, "segment_ms": 1000})
	if canForceBoundaries {
		if hs.AdvanceMs != 100 || hs.SegmentMs != 0 {
			t.Fatalf("modern runtime handshake %+v", hs)
		}
		c.send(frameStop, nil)
		c.untilEnd()
		return
	}
	if hs.AdvanceMs != 0 || hs.SegmentMs != 1000 {
		t.Fatalf("legacy runtime handshake %+v", hs)
	}
	// Wait for a segment to end, then stop.
	for {
		typ, body := c.frame()
		if typ == frameSegment {
			var m segmentMsg
			c.decode(body, &m)
			if m.Segment != 1 || m.StopUnixNs == 0 {
				t.Fatalf("segment %+v", m)
			}
			break
		}
	}
	c.send(frameStop, nil)
	if end := c.untilEnd().end; end.Reason != reasonClientStop || !end.Complete {
		t.Fatalf("end %+v", end)
	}
}

func TestHeartbeatsFillTheSilence(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	c := dial(t, s)
	c.start(map[string]any{"heartbeat_ms": 100})
	for {
		typ, body := c.frame()
		if typ == frameHeartbeat {
			if len(body) != 0 {
				t.Fatalf("heartbeat payload %q", body)
			}
			break
		}
		if typ != frameChunk {
			t.Fatalf("frame %#x before any heartbeat", typ)
		}
	}
	c.send(frameStop, nil)
	if end := c.untilEnd().end; end.Reason != reasonClientStop || !end.Complete {
		t.Fatalf("end %+v", end)
	}
}
