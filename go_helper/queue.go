package livetrace

import (
	"sync"
	"time"
)

// queue is the bounded buffer between the runtime's trace reader, which
// must never wait, and the sender, which writes to a consumer that may be
// slow. Chunk bytes live in one preallocated ring, so a full queue costs no
// garbage and the process's memory stays within the ring's size however far
// the consumer falls behind.
type queue struct {
	mu   sync.Mutex
	wake *sync.Cond

	buf              []byte
	rpos, wpos, used int // used counts chunk bytes plus the ring tail skipped by a wrap
	recs             []record
	maxRecs          int
	inflight         bool // recs[0] is being written by the sender
	closed           bool

	sawHeader, modern bool
	seq               uint64 // every chunk the runtime handed over, kept or not
	curGen            uint64
	sentGen           uint64  // generation of the latest chunk the sender took
	shedding          *gapMsg // generation being shed, reported once it ends
	dropped           dropStats
	lost              bool // legacy data was dropped: the trace cannot be complete

	// Legacy traces are only readable whole, so instead of shedding, the
	// queue asks for the trace to stop once it passes highWater, keeping
	// the rest of the ring for the buffers and footer StopTrace flushes.
	highWater  int
	onOverflow func()
	overflowed bool
}

type recordKind uint8

const (
	recChunk recordKind = iota
	recGap
	recSegment
	recHeartbeat
)

type record struct {
	kind     recordKind
	off, n   int
	waste    int // ring tail skipped to place this record at offset 0
	seq      uint64
	unixNano int64
	gen      uint64
	gap      gapMsg
	segment  segmentMsg
}

type dropStats struct {
	chunks, bytes, generations uint64
}

func newQueue(buf []byte, onOverflow func()) *queue {
	maxRecs := len(buf) / 1024
	if maxRecs < 256 {
		maxRecs = 256
	}
	q := &queue{buf: buf, maxRecs: maxRecs, highWater: len(buf) - len(buf)/4, onOverflow: onOverflow}
	q.wake = sync.NewCond(&q.mu)
	return q
}

// Write is called by runtime/trace with one chunk; it copies and returns.
func (q *queue) Write(p []byte) (int, error) {
	now := time.Now().UnixNano()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	if !q.sawHeader {
		q.sawHeader = true
		q.modern = isModernHeader(p)
	}
	var gen uint64
	if q.modern && q.seq > 1 {
		gen = chunkGeneration(p, q.curGen)
		if gen != q.curGen {
			q.curGen = gen
			q.endShedding()
		}
		if q.shedding != nil {
			q.shedding.Chunks++
			q.shedding.Bytes += uint64(len(p))
			q.countDrop(len(p))
			return len(p), nil
		}
	}
	if q.closed {
		q.countDrop(len(p))
		return len(p), nil
	}
	if !q.modern && !q.overflowed && q.used+len(p) > q.highWater {
		q.overflow()
	}
	off, waste, ok := q.alloc(len(p))
	if !ok {
		if q.modern && gen != 0 {
			q.shed(gen, len(p))
		} else {
			q.lost = true
			q.countDrop(len(p))
			q.overflow()
		}
		return len(p), nil
	}
	copy(q.buf[off:], p)
	q.wpos = off + len(p)
	q.used += len(p) + waste
	q.recs = append(q.recs, record{kind: recChunk, off: off, n: len(p), waste: waste, seq: q.seq, unixNano: now, gen: gen})
	q.wake.Signal()
	return len(p), nil
}

func (q *queue) overflow() {
	if !q.overflowed {
		q.overflowed = true
		q.onOverflow()
	}
}

func (q *queue) countDrop(n int) {
	q.dropped.chunks++
	q.dropped.bytes += uint64(n)
}

// alloc finds room for n contiguous bytes.
func (q *queue) alloc(n int) (off, waste int, ok bool) {
	size := len(q.buf)
	if n > size || len(q.recs) >= q.maxRecs {
		return 0, 0, false
	}
	if q.used == 0 {
		q.rpos, q.wpos = 0, 0
	}
	full := q.wpos == q.rpos && q.used > 0
	switch {
	case full:
		return 0, 0, false
	case q.wpos >= q.rpos:
		if size-q.wpos >= n {
			return q.wpos, 0, true
		}
		if q.rpos >= n {
			return 0, size - q.wpos, true
		}
	case q.rpos-q.wpos >= n:
		return q.wpos, 0, true
	}
	return 0, 0, false
}

// shed drops generation gen: what of it is still queued, the chunk that did
// not fit, and whatever of it arrives later. The consumer learns of it
// through one gap frame, sent where the generation would have been.
func (q *queue) shed(gen uint64, n int) {
	first := 0
	if q.inflight {
		first = 1
	}
	i := len(q.recs)
	for i > first && q.recs[i-1].kind == recChunk && q.recs[i-1].gen == gen {
		i--
	}
	gap := &gapMsg{FirstGeneration: gen, LastGeneration: gen, DiscardReceived: q.sentGen == gen}
	for j, r := range q.recs[i:] {
		if j == 0 {
			q.wpos = r.off
			if r.waste > 0 {
				q.wpos = len(q.buf) - r.waste
			}
		}
		q.used -= r.n + r.waste
		gap.Chunks++
		gap.Bytes += uint64(r.n)
		q.countDrop(r.n)
	}
	q.recs = q.recs[:i]
	// A gap for the previous generation that is still queued grows to cover
	// this one, so consecutive sheds reach the consumer as one gap.
	if i > first && q.recs[i-1].kind == recGap && q.recs[i-1].gap.LastGeneration+1 == gen {
		prev := q.recs[i-1].gap
		q.recs = q.recs[:i-1]
		prev.LastGeneration = gen
		prev.Chunks += gap.Chunks
		prev.Bytes += gap.Bytes
		gap = &prev
	}
	gap.Chunks++
	gap.Bytes += uint64(n)
	q.countDrop(n)
	q.dropped.generations++
	q.shedding = gap
}

// endShedding queues the gap of the generation being shed, if any.
func (q *queue) endShedding() {
	if q.shedding == nil {
		return
	}
	q.recs = append(q.recs, record{kind: recGap, gap: *q.shedding})
	q.shedding = nil
	q.wake.Signal()
}

// endSegment marks the end of a complete trace (its StopTrace has
// returned); the next chunk starts a new one, with its own header.
func (q *queue) endSegment(m segmentMsg) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recs = append(q.recs, record{kind: recSegment, segment: m})
	q.sawHeader = false
	q.wake.Signal()
}

// heartbeat queues a heartbeat frame if nothing is waiting to be sent: with
// anything queued, the consumer hears from the helper soon anyway.
func (q *queue) heartbeat() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.recs) > 0 {
		return false
	}
	q.recs = append(q.recs, record{kind: recHeartbeat})
	q.wake.Signal()
	return true
}

// next waits for the oldest record and lends it to the sender, which hands
// it back with done. ok is false once the queue is closed and empty.
func (q *queue) next() (r record, data []byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.recs) == 0 && !q.closed {
		q.wake.Wait()
	}
	if len(q.recs) == 0 {
		return record{}, nil, false
	}
	r = q.recs[0]
	q.inflight = true
	if r.kind == recChunk {
		q.sentGen = r.gen
	}
	return r, q.buf[r.off : r.off+r.n], true
}

func (q *queue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.recs[0]
	q.recs = q.recs[1:]
	q.inflight = false
	if r.kind == recChunk {
		q.rpos = r.off + r.n
		q.used -= r.n + r.waste
	}
}

// close is called once the runtime has handed over the whole trace.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.endShedding()
	q.closed = true
	q.wake.Broadcast()
}

func (q *queue) stats() (dropped dropStats, modern, lost bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped, q.modern, q.lost
}
