package livetrace

import (
	"fmt"
	"runtime"
	"runtime/trace"
	"sort"
	"sync"
	"time"
)

// A hub is one run of the runtime's tracer, from trace.Start to trace.Stop,
// shared by every consumer attached meanwhile. The first consumer starts
// it; it stops when no consumer wants it any more (the last one left, asked
// to stop or had its duration end), when the service closes, or on legacy
// Go when its only consumer fell too far behind. It is released, and its
// ring unmapped, once every consumer has had its end frame.
type hub struct {
	srv      *Server
	freeRing func() error
	start    time.Time
	segment  time.Duration // legacy segment period, fixed for the run; 0 without segments
	retune   chan struct{} // the advance period may have changed
	grown    chan struct{} // the current generation reached the size asked for
	stopCh   chan struct{} // closed by stopLocked
	released chan struct{} // closed once the run is over and its consumers are gone

	mu         sync.Mutex
	consumers  []*consumer // those reading the ring, each from its own position
	members    []*consumer // consumers not yet done, including those no longer reading
	attached   int         // len(members)
	active     int         // consumers that still want the trace to run
	stopping   bool        // the tracer is being stopped (or is stopped)
	closed     bool        // the tracer is stopped: no more records will come
	stopReason string

	// The ring (ring.go).
	buf        []byte
	recs       []record // circular; head and tail count records ever pushed
	head, tail uint64
	wpos       int
	total      uint64

	sawHeader             bool
	modern                bool
	header                []byte // the first trace header, for consumers joining later
	headerSeq             uint64
	headerTime            int64
	seq                   uint64 // every chunk the runtime handed over, kept or not
	curGen                uint64 // generation of the latest chunk (modern Go)
	genBytes              uint64 // bytes of curGen so far
	split                 uint64 // the smallest advanceBytes of the consumers reading; 0: none
	splitAt               uint64 // the generation whose size already asked for a boundary
	segments              uint64 // legacy segments completed
	overflowed, restarted bool
}

func newHub(s *Server, buf []byte, free func() error) *hub {
	maxRecs := len(buf) / 1024
	if maxRecs < 256 {
		maxRecs = 256
	}
	return &hub{
		srv: s, freeRing: free, buf: buf, recs: make([]record, maxRecs),
		retune: make(chan struct{}, 1), grown: make(chan struct{}, 1), stopCh: make(chan struct{}), released: make(chan struct{}),
	}
}

// join adds a consumer to the running trace and says where its stream
// starts. It refuses a legacy consumer that could only get part of a trace.
func (h *hub) join(c *consumer) (refusal, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopping {
		return refusal{}, false // the caller waits for the next run
	}
	if max := h.srv.opts.MaxConsumers; h.attached >= max {
		return refusal{errorMsg{errCodeBusy, fmt.Sprintf("busy: %s already attached to this service's trace, the most it serves at once "+
			"(LIVETRACE_MAX_CONSUMERS or Options.MaxConsumers): %s", plural(h.attached, "consumer is", "consumers are"), h.describeLocked())},
			fmt.Sprintf("busy: %d of %d consumers attached to this service's trace; try again later", h.attached, max)}, true
	}
	switch {
	case h.seq <= 1 && h.head == 0 && h.segments == 0:
		// Nothing but the header yet: the whole trace is still there.
		c.next = 0
	case h.modern:
		c.joined, c.needHeader = true, true
		c.next, c.skipping, c.skipGen = h.tail, true, h.curGen
		c.firstGen = h.curGen + 1
	case h.segment > 0:
		c.joined, c.waitSegment = true, true
		c.next = h.tail
		c.firstSegment = h.segments + 2 // the one after the segment running now
	default:
		return h.legacyRefusal(), true
	}
	h.add(c)
	return refusal{}, true
}

// refusal is why a consumer was not attached. Message is for the helper's
// own clients, which got past its access control, and may name the
// consumers attached; anonymous, when set, says the same without naming
// them, for /debug/pprof/trace, whose requesters may have passed none.
type refusal struct {
	errorMsg
	anonymous string
}

// public is the refusal as anyone may read it.
func (r refusal) public() string {
	if r.anonymous != "" {
		return r.anonymous
	}
	return r.Message
}

// legacyRefusal explains why a legacy trace cannot be joined.
func (h *hub) legacyRefusal() refusal {
	wait := "it has no set end: wait until its consumers stop"
	if left, ok := h.remainingLocked(); ok {
		wait = fmt.Sprintf("it ends in about %s, when its consumers' durations are over", left.Round(time.Second))
	}
	why := func(running string) string {
		return fmt.Sprintf("this process runs %s, whose trace is only readable whole, and a trace without segments is already "+
			"running%s: a consumer cannot start in the middle of it; %s (consumers that all ask for segments, "+
			"--segment, can share a trace)", runtime.Version(), running, wait)
	}
	return refusal{errorMsg{errCodeLegacyRunning, why(" for " + h.describeLocked())}, why("")}
}

// remainingLocked is how long until every attached consumer's duration is
// over; false if one has none.
func (h *hub) remainingLocked() (time.Duration, bool) {
	var left time.Duration
	for _, c := range h.members {
		if c.duration <= 0 {
			return 0, false
		}
		if d := time.Until(c.since.Add(c.duration)); d > left {
			left = d
		}
	}
	return left, true
}

func (h *hub) add(c *consumer) {
	c.hub = h
	h.consumers = append(h.consumers, c)
	h.members = append(h.members, c)
	h.attached++
	h.active++
	h.poke()
}

// poke tells the advancer that the set of consumers changed.
func (h *hub) poke() {
	h.split = h.advanceSizeLocked()
	select {
	case h.retune <- struct{}{}:
	default:
	}
}

// describeLocked names the attached consumers, for refusals.
func (h *hub) describeLocked() string {
	names := make([]string, 0, len(h.members))
	for _, c := range h.members {
		names = append(names, fmt.Sprintf("session %d (%s, since %s)", c.id, c.describe(), c.since.UTC().Format(time.RFC3339)))
	}
	sort.Strings(names)
	s := names[0]
	for _, n := range names[1:] {
		s += "; " + n
	}
	return s
}

// requestStop is a consumer's wish to end its stream. If others still
// want the trace, this consumer alone ends, at a point where its stream is
// a complete trace: after the current generation on modern Go (forced to
// close now), at the next segment boundary on legacy Go. Otherwise the
// tracer stops, and the stream ends with the trace.
func (h *hub) requestStop(c *consumer, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.reason != "" || c.fellBehind {
		return
	}
	if h.stopping {
		// The trace is already stopping for every consumer (a legacy
		// overflow, the service closing): that, not this wish, ends the stream.
		h.setReason(c, h.stopReason)
		return
	}
	h.setReason(c, reason)
	if h.active == 0 {
		h.stopLocked(reason)
		return
	}
	c.ending = true
	c.wakeUp()
	switch {
	case h.modern:
		c.endAfterGen = h.curGen
		go forceBoundary()
	case h.segment == 0:
		// Cannot happen (a legacy trace without segments has one consumer), but
		// should it: the stream ends now and is incomplete.
		c.fellBehind = true
		h.dropPosition(c)
	}
}

// setReason records why a consumer's stream ends; it no longer keeps the
// trace running.
func (h *hub) setReason(c *consumer, reason string) {
	if c.reason != "" {
		return
	}
	c.reason = reason
	h.active--
	h.poke()
}

// stopLocked asks the run to stop the tracer.
func (h *hub) stopLocked(reason string) {
	if h.stopping {
		return
	}
	h.stopping, h.stopReason = true, reason
	close(h.stopCh)
}

// isReleased reports whether the run is over and its consumers gone.
func (h *hub) isReleased() bool {
	select {
	case <-h.released:
		return true
	default:
		return false
	}
}

func (h *hub) stop(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopLocked(reason)
}

// dropPosition takes a consumer off the ring: it reads nothing more.
func (h *hub) dropPosition(c *consumer) { h.consumers = without(h.consumers, c) }

func without(list []*consumer, c *consumer) []*consumer {
	for i, x := range list {
		if x == c {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// leave is a consumer's last act, once its end frame is out or its
// connection is gone.
func (h *hub) leave(c *consumer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.setReason(c, reasonClientDisconnect)
	h.dropPosition(c)
	h.members = without(h.members, c)
	h.attached--
	if h.active == 0 {
		h.stopLocked(c.reason)
	}
	h.releaseIfDone()
}

// releaseIfDone frees the ring and lets the next run start once the tracer
// is stopped and no consumer is left.
func (h *hub) releaseIfDone() {
	if !h.closed || h.attached > 0 {
		return
	}
	if h.isReleased() {
		return
	}
	if err := h.freeRing(); err != nil {
		h.srv.logf("releasing the queue's memory: %v", err)
	}
	h.buf = nil
	close(h.released)
}

// run owns the tracer, which the first consumer started, until it stops.
func (h *hub) run() {
	advancing := make(chan struct{})
	go h.advance(advancing)
	tracing := h.cycle()
	<-advancing
	if tracing {
		trace.Stop() // returns once the runtime has handed over the final chunk
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, c := range h.consumers {
		c.wakeUp()
	}
	h.releaseIfDone()
}

// cycle waits for the stop; with a segment period, it stops and restarts
// the trace that often meanwhile, so that every segment is a complete
// legacy trace (StopTrace flushes every buffer and the footer). It reports
// whether the trace is still running.
func (h *hub) cycle() bool {
	if h.segment == 0 {
		<-h.stopCh
		return true
	}
	t := time.NewTicker(h.segment)
	defer t.Stop()
	for n := uint64(1); ; n++ {
		select {
		case <-h.stopCh:
			return true
		case <-t.C:
		}
		trace.Stop()
		h.endSegment(segmentMsg{Segment: n, StopUnixNs: time.Now().UnixNano()})
		if err := trace.Start(h); err != nil {
			// Something else started tracing in the moment it was off.
			h.srv.logf("could not restart the trace for the next segment: %v", err)
			h.stop(reasonRestartFailed)
			return false
		}
		h.mu.Lock()
		h.segments = n
		h.mu.Unlock()
	}
}

// advance closes a generation at the shortest period any consumer still
// reading asked for, and early when one grows past the smallest size one
// asked for (but never sooner than minAdvanceMs after the last), until the
// trace stops.
func (h *hub) advance(done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	last := time.Now()
	var closed uint64 // the generation the last boundary closed
	for {
		period := h.advancePeriod()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if period > 0 {
			t.Reset(period)
		}
		select {
		case <-h.stopCh:
			return
		case <-h.retune:
		case <-h.grown:
			if early := time.Until(last.Add(minAdvanceMs * time.Millisecond)); early > 0 {
				select {
				case <-h.stopCh:
					return
				case <-time.After(early):
				}
			}
			if h.splitAtGen() > closed { // not closed by the period meanwhile
				closed, last = h.closeGeneration()
			}
		case <-t.C:
			closed, last = h.closeGeneration()
		}
	}
}

// closeGeneration forces a boundary, and says which generation it closed
// (at least) and when.
func (h *hub) closeGeneration() (uint64, time.Time) {
	h.mu.Lock()
	gen := h.curGen
	h.mu.Unlock()
	forceBoundary()
	return gen, time.Now()
}

// splitAtGen is the generation that last asked for a boundary by its size.
func (h *hub) splitAtGen() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.splitAt
}

func (h *hub) advancePeriod() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var p time.Duration
	for _, c := range h.consumers {
		if c.reason == "" && c.advance > 0 && (p == 0 || c.advance < p) {
			p = c.advance
		}
	}
	return p
}

func (h *hub) advanceMs() int64 { return h.advancePeriod().Milliseconds() }

func (h *hub) advanceSize() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.split
}

func (h *hub) advanceSizeLocked() uint64 {
	var n uint64
	for _, c := range h.consumers {
		if c.reason == "" && c.advanceBytes > 0 && (n == 0 || c.advanceBytes < n) {
			n = c.advanceBytes
		}
	}
	return n
}

// grew counts a chunk of generation gen, and asks the advancer for a
// boundary, once a generation, when it passes the size asked for.
func (h *hub) grew(gen uint64, n int) {
	if gen != h.curGen {
		h.genBytes = 0
	}
	h.genBytes += uint64(n)
	if h.split == 0 || h.genBytes < h.split || h.splitAt == gen {
		return
	}
	h.splitAt = gen
	select {
	case h.grown <- struct{}{}:
	default:
	}
}
