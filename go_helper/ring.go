package livetrace

import (
	"encoding/binary"
	"encoding/json"
	"time"
)

// The shared ring: the runtime/trace writer copies every chunk into one
// preallocated byte ring, and every consumer reads it from its own
// position. The writer never waits for anyone: when a chunk does not fit,
// the oldest records are dropped, and a consumer that had not read them yet
// is the one that loses them (whole generations on modern Go, told with a
// gap frame; on legacy Go its trace is incomplete). A fast consumer never
// notices a slow one, and memory stays at the ring's size however many
// consumers there are and however far they fall behind.

type recordKind uint8

const (
	recChunk   recordKind = iota
	recSegment            // a legacy segment ended; the next chunk is a new header
)

type record struct {
	kind     recordKind
	off, n   int
	waste    int    // ring tail skipped to place this record at offset 0
	end      uint64 // bytes written to the ring (waste included) up to the end of this record
	seq      uint64
	unixNano int64
	gen      uint64
	segment  segmentMsg
}

// batchBytes is about how much one consumer copies out of the ring per
// socket write: the consumer's own memory, beyond the shared ring.
const batchBytes = 64 << 10

// Write is called by runtime/trace with one chunk; it copies and returns.
func (h *hub) Write(p []byte) (int, error) {
	now := time.Now().UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if len(p) == 0 {
		return 0, nil
	}
	header := !h.sawHeader
	if header {
		h.sawHeader = true
		if h.header == nil {
			h.modern = isModernHeader(p)
			h.header = append([]byte(nil), p...)
			h.headerSeq, h.headerTime = h.seq, now
		}
	}
	var gen uint64
	if h.modern && !header {
		gen = chunkGeneration(p, h.curGen)
		h.grew(gen, len(p))
		h.curGen = gen
	}
	if !h.modern && !h.stopping {
		h.checkLag(len(p))
	}
	off, waste, ok := h.alloc(len(p))
	if !ok { // larger than the whole ring: nobody can have it
		for _, c := range h.consumers {
			c.miss(h, &record{kind: recChunk, n: len(p), gen: gen})
		}
		return len(p), nil
	}
	copy(h.buf[off:], p)
	h.wpos = off + len(p)
	h.total += uint64(len(p) + waste)
	h.push(record{kind: recChunk, off: off, n: len(p), waste: waste, end: h.total, seq: h.seq, unixNano: now, gen: gen})
	return len(p), nil
}

// endSegment marks the end of a complete legacy trace (its StopTrace has
// returned); the next chunk starts a new one, with its own header.
func (h *hub) endSegment(m segmentMsg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.full() {
		h.evict()
	}
	h.push(record{kind: recSegment, end: h.total, segment: m})
	h.sawHeader = false
}

func (h *hub) at(i uint64) *record { return &h.recs[i%uint64(len(h.recs))] }

func (h *hub) full() bool { return h.tail-h.head == uint64(len(h.recs)) }

func (h *hub) push(r record) {
	*h.at(h.tail) = r
	h.tail++
	for _, c := range h.consumers {
		c.wakeUp()
	}
}

// alloc finds room for n contiguous bytes, dropping the oldest records
// until there is.
func (h *hub) alloc(n int) (off, waste int, ok bool) {
	size := len(h.buf)
	if n > size {
		return 0, 0, false
	}
	for {
		if h.head == h.tail {
			h.wpos = 0
			return 0, 0, true
		}
		if !h.full() {
			rpos := h.oldestOffset()
			switch {
			case h.wpos > rpos:
				if size-h.wpos >= n {
					return h.wpos, 0, true
				}
				if rpos >= n {
					return 0, size - h.wpos, true
				}
			case h.wpos < rpos:
				if rpos-h.wpos >= n {
					return h.wpos, 0, true
				}
			}
		}
		h.evict()
	}
}

// oldestOffset is where the oldest record's bytes start; a segment marker
// holds none, so the first chunk after it counts.
func (h *hub) oldestOffset() int {
	for i := h.head; i < h.tail; i++ {
		if r := h.at(i); r.kind == recChunk {
			return r.off
		}
	}
	return h.wpos
}

// evict drops the oldest record; consumers that had not read it lose it.
func (h *hub) evict() {
	r := h.at(h.head)
	for _, c := range h.consumers {
		if c.next == h.head {
			c.next++
			c.miss(h, r)
		}
	}
	h.head++
}

// unread is how many ring bytes consumer c has yet to read.
func (h *hub) unread(c *consumer) uint64 {
	if c.next >= h.tail {
		return 0
	}
	r := h.at(c.next)
	return h.total - (r.end - uint64(r.n+r.waste))
}

// checkLag applies the legacy policy before a chunk of n bytes is added.
// A legacy trace is only readable whole, so nothing can be shed: a consumer
// whose unread data would pass three quarters of the ring is ended, alone
// and incomplete, if others are attached; if it is the only one, the trace
// is stopped instead, keeping the last quarter for the buffers and footer
// the runtime flushes on stop, and its trace is complete.
func (h *hub) checkLag(n int) {
	highWater := uint64(len(h.buf) - len(h.buf)/4)
	for i := 0; i < len(h.consumers); i++ {
		c := h.consumers[i]
		if c.waitSegment || h.unread(c)+uint64(n) <= highWater {
			continue
		}
		if len(h.consumers) == 1 {
			h.stopLocked(reasonOverflow)
			return
		}
		c.fellBehind = true
		h.setReason(c, reasonFellBehind)
		h.dropPosition(c)
		c.wakeUp()
		i--
	}
}

// miss tells consumer c it will never read record r.
func (c *consumer) miss(h *hub, r *record) {
	switch {
	case c.waitSegment:
		if r.kind == recSegment {
			c.waitSegment = false // the next record starts the segment it waited for
		}
	case r.kind == recSegment:
		c.lost = true
	case h.modern && r.gen == 0: // the trace header: a copy is kept
		c.needHeader = true
	case h.modern:
		c.shed(r.gen, r.n)
	default:
		c.lost = true
		c.dropped.chunks++
		c.dropped.bytes += uint64(r.n)
	}
}

// shed drops the rest of generation gen for this consumer: it skips ahead
// to the first chunk of a later generation and is told with one gap frame.
func (c *consumer) shed(gen uint64, n int) {
	if !c.skipping || gen > c.skipGen {
		if c.gap == nil {
			c.gap = &gapMsg{FirstGeneration: gen, DiscardReceived: c.sentGen == gen}
		}
		c.skipping, c.skipGen = true, gen
	}
	if c.gap != nil {
		c.gap.Chunks++
		c.gap.Bytes += uint64(n)
		c.dropped.chunks++
		c.dropped.bytes += uint64(n)
	}
}

// take copies what consumer c may read next into out, as whole frames, up
// to about batchBytes; done says its stream is over (the end frame comes
// next). It must be called with h.mu held.
func (h *hub) take(c *consumer, out []byte) (_ []byte, done bool) {
	if c.fellBehind {
		return out, true
	}
	for len(out) < batchBytes {
		if c.needHeader {
			out = appendChunkFrame(out, h.headerSeq, h.headerTime, 0, h.header)
			c.needHeader = false
			c.sent(len(h.header), 0)
			continue
		}
		if c.next >= h.tail {
			if h.closed {
				return c.closeGap(out), true
			}
			return out, false
		}
		r := h.at(c.next)
		if r.kind == recSegment {
			switch {
			case c.waitSegment:
				c.waitSegment = false
			case c.ending:
				return out, true // the end frame takes the segment frame's place
			default:
				out = appendJSONFrame(out, frameSegment, r.segment)
			}
			c.next++
			continue
		}
		if c.waitSegment {
			c.next++
			continue
		}
		if h.modern && r.gen != 0 {
			if c.ending && r.gen > c.endAfterGen {
				return c.closeGap(out), true
			}
			if c.skipping {
				if r.gen <= c.skipGen {
					if c.gap != nil {
						c.gap.Chunks++
						c.gap.Bytes += uint64(r.n)
						c.dropped.chunks++
						c.dropped.bytes += uint64(r.n)
					}
					c.next++
					continue
				}
				c.skipping = false
				if c.gap != nil {
					c.gap.LastGeneration = r.gen - 1
					out = c.flushGap(out)
				}
			}
		}
		out = appendChunkFrame(out, r.seq, r.unixNano, r.gen, h.buf[r.off:r.off+r.n])
		c.sent(r.n, r.gen)
		c.next++
	}
	return out, false
}

// closeGap sends the gap still open when the stream ends.
func (c *consumer) closeGap(out []byte) []byte {
	if c.gap == nil {
		return out
	}
	c.gap.LastGeneration = c.skipGen
	return c.flushGap(out)
}

func (c *consumer) flushGap(out []byte) []byte {
	c.dropped.generations += c.gap.LastGeneration - c.gap.FirstGeneration + 1
	out = appendJSONFrame(out, frameGap, *c.gap)
	c.gap = nil
	return out
}

func appendChunkFrame(out []byte, seq uint64, unixNano int64, gen uint64, data []byte) []byte {
	out = frameHeader(out, frameChunk, chunkHeaderSize+len(data))
	out = binary.BigEndian.AppendUint64(out, seq)
	out = binary.BigEndian.AppendUint64(out, uint64(unixNano))
	out = binary.BigEndian.AppendUint64(out, gen)
	return append(out, data...)
}

func appendJSONFrame(out []byte, typ byte, v any) []byte {
	body, err := json.Marshal(v)
	if err != nil { // plain structs of numbers and strings always marshal
		panic(err)
	}
	return append(frameHeader(out, typ, len(body)), body...)
}
