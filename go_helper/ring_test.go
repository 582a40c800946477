package livetrace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func batch(gen uint64, payload int) []byte {
	b := []byte{modernEventBatch}
	b = binary.AppendUvarint(b, gen)
	b = binary.AppendUvarint(b, 7)    // m
	b = binary.AppendUvarint(b, 1000) // time
	b = binary.AppendUvarint(b, uint64(payload))
	return append(b, bytes.Repeat([]byte{byte(gen)}, payload)...)
}

var modernHeader = []byte("go 1.26 trace\x00\x00\x00")

// testHub is a hub with a ring of n bytes and no tracer: the tests play
// the runtime's part by calling Write.
func testHub(t *testing.T, n int) *hub {
	t.Helper()
	s := &Server{opts: Options{MaxConsumers: 3, Logf: t.Logf}}
	return newHub(s, make([]byte, n), func() error { return nil })
}

// attachTest joins a consumer as the server would.
func attachTest(t *testing.T, h *hub) *consumer {
	t.Helper()
	c := &consumer{wake: make(chan struct{}, 1), since: time.Now()}
	h.mu.Lock()
	first := h.attached == 0
	h.mu.Unlock()
	if first {
		h.mu.Lock()
		h.add(c)
		h.mu.Unlock()
		return c
	}
	why, ok := h.join(c)
	if !ok || why.Code != "" {
		t.Fatalf("join refused: %+v (%v)", why, ok)
	}
	return c
}

// got is what a consumer read: its chunks, gaps and segment ends, in order.
type got struct {
	chunks   [][]byte
	gens     []uint64
	gaps     []gapMsg
	segments int
	done     bool
}

// drain takes everything the consumer may read now, as its sender would.
func drain(t *testing.T, h *hub, c *consumer) got {
	t.Helper()
	var g got
	for {
		h.mu.Lock()
		out, done := h.take(c, nil)
		h.mu.Unlock()
		for len(out) > 0 {
			typ, n := out[0], int(binary.BigEndian.Uint32(out[1:5]))
			body := out[frameHeaderSize : frameHeaderSize+n]
			out = out[frameHeaderSize+n:]
			switch typ {
			case frameChunk:
				g.chunks = append(g.chunks, append([]byte(nil), body[chunkHeaderSize:]...))
				g.gens = append(g.gens, binary.BigEndian.Uint64(body[16:24]))
			case frameGap:
				var m gapMsg
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				g.gaps = append(g.gaps, m)
			case frameSegment:
				g.segments++
			default:
				t.Fatalf("frame %#x", typ)
			}
		}
		if done {
			g.done = true
			return g
		}
		h.mu.Lock()
		more := c.next < h.tail || c.needHeader
		h.mu.Unlock()
		if !more {
			return g
		}
	}
}

func closeTest(h *hub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopLocked("test")
	h.closed = true
}

func TestModernChunksReachEveryConsumerInOrder(t *testing.T) {
	h := testHub(t, 4096)
	a, b := attachTest(t, h), attachTest(t, h)
	in := [][]byte{modernHeader, batch(1, 100), batch(1, 200), {modernEndOfGeneration}, batch(2, 50)}
	for _, c := range in {
		h.Write(c)
	}
	closeTest(h)
	for _, c := range []*consumer{a, b} {
		out := drain(t, h, c)
		if len(out.gaps) != 0 || len(out.chunks) != len(in) || !out.done {
			t.Fatalf("got %d chunks and %d gaps, done=%v", len(out.chunks), len(out.gaps), out.done)
		}
		for i := range in {
			if !bytes.Equal(in[i], out.chunks[i]) {
				t.Fatalf("chunk %d differs", i)
			}
		}
	}
}

func TestASlowConsumerShedsWholeGenerationsAndTheOthersLoseNothing(t *testing.T) {
	h := testHub(t, 1000)
	fast, slow := attachTest(t, h), attachTest(t, h)
	var want [][]byte
	var fastGot got
	h.Write(modernHeader)
	fastGot.chunks = append(fastGot.chunks, drain(t, h, fast).chunks...)
	want = append(want, modernHeader)
	for gen := uint64(1); gen <= 4; gen++ {
		for i := 0; i < 3; i++ {
			p := batch(gen, 200)
			h.Write(p)
			want = append(want, p)
			fastGot.chunks = append(fastGot.chunks, drain(t, h, fast).chunks...)
		}
	}
	closeTest(h)
	fastGot.chunks = append(fastGot.chunks, drain(t, h, fast).chunks...)
	if len(fastGot.chunks) != len(want) {
		t.Fatalf("the fast consumer got %d chunks of %d", len(fastGot.chunks), len(want))
	}
	// The slow one read nothing meanwhile: it lost the header's place in the
	// ring (a copy is kept) and the generations whose chunks were overwritten,
	// and resumes at a generation it has whole.
	out := drain(t, h, slow)
	if !bytes.Equal(out.chunks[0], modernHeader) {
		t.Fatal("the slow consumer's stream does not start with the header")
	}
	if len(out.gaps) != 1 || out.gaps[0].FirstGeneration != 1 || out.gaps[0].DiscardReceived {
		t.Fatalf("gaps %+v", out.gaps)
	}
	g := out.gaps[0]
	for _, gen := range out.gens[1:] {
		if gen <= g.LastGeneration {
			t.Fatalf("chunk of shed generation %d delivered after the gap %+v", gen, g)
		}
	}
	if n := len(out.chunks) - 1; n != 3*int(4-g.LastGeneration) {
		t.Fatalf("%d chunks after the gap %+v: want the whole of every later generation", n, g)
	}
	if slow.dropped.generations != g.LastGeneration || slow.dropped.chunks != g.Chunks || fast.dropped.chunks != 0 {
		t.Fatalf("dropped: slow %+v, fast %+v", slow.dropped, fast.dropped)
	}
}

func TestShedAfterPartialSendTellsTheConsumerToDiscard(t *testing.T) {
	h := testHub(t, 1000)
	c := attachTest(t, h)
	h.Write(modernHeader)
	h.Write(batch(1, 300))
	drain(t, h, c) // the header and the first batch of generation 1 reach the consumer
	h.Write(batch(1, 600))
	h.Write(batch(1, 600)) // overwrites the unread one: generation 1 is shed
	h.Write(batch(2, 10))
	out := drain(t, h, c)
	if len(out.gaps) != 1 || !out.gaps[0].DiscardReceived || out.gaps[0].FirstGeneration != 1 || out.gaps[0].LastGeneration != 1 {
		t.Fatalf("gaps %+v: want one gap for generation 1 with DiscardReceived", out.gaps)
	}
	if len(out.chunks) != 1 || out.gens[0] != 2 {
		t.Fatalf("after the gap: generations %v", out.gens)
	}
}

func TestConsecutiveShedsReachTheConsumerAsOneGap(t *testing.T) {
	h := testHub(t, 1000)
	c := attachTest(t, h)
	h.Write(modernHeader)
	drain(t, h, c)
	for gen := uint64(1); gen <= 5; gen++ {
		h.Write(batch(gen, 900)) // each overwrites the one before, unread
	}
	closeTest(h)
	out := drain(t, h, c)
	if len(out.gaps) != 1 || out.gaps[0].FirstGeneration != 1 || out.gaps[0].LastGeneration != 4 {
		t.Fatalf("gaps %+v: want one gap for generations 1-4", out.gaps)
	}
	if len(out.chunks) != 1 || out.gens[0] != 5 || !out.done {
		t.Fatalf("generations %v done=%v", out.gens, out.done)
	}
}

func TestAGapStillOpenAtTheEndIsSent(t *testing.T) {
	h := testHub(t, 1000)
	c := attachTest(t, h)
	h.Write(modernHeader)
	drain(t, h, c)
	h.Write(batch(1, 900))
	h.Write(batch(1, 900))
	closeTest(h)
	out := drain(t, h, c)
	if len(out.gaps) != 1 || out.gaps[0].LastGeneration != 1 || !out.done {
		t.Fatalf("gaps %+v done=%v", out.gaps, out.done)
	}
}

func TestALateJoinerGetsTheHeaderThenTheNextGeneration(t *testing.T) {
	h := testHub(t, 4096)
	first := attachTest(t, h)
	h.Write(modernHeader)
	h.Write(batch(1, 100))
	h.Write(batch(2, 100))
	late := attachTest(t, h)
	if !late.joined || late.firstGen != 3 {
		t.Fatalf("joiner: joined=%v firstGen=%d", late.joined, late.firstGen)
	}
	h.Write(batch(2, 100)) // the rest of generation 2 is not the joiner's
	h.Write([]byte{modernEndOfGeneration})
	h.Write(batch(3, 100))
	closeTest(h)
	out := drain(t, h, late)
	if len(out.gaps) != 0 || len(out.chunks) != 2 || !bytes.Equal(out.chunks[0], modernHeader) || out.gens[1] != 3 {
		t.Fatalf("joiner got generations %v and gaps %+v", out.gens, out.gaps)
	}
	if n := len(drain(t, h, first).chunks); n != 6 {
		t.Fatalf("the first consumer got %d chunks", n)
	}
}

func TestAConsumerJoiningBeforeAnyEventGetsTheWholeTrace(t *testing.T) {
	h := testHub(t, 4096)
	attachTest(t, h)
	h.Write(modernHeader)
	c := attachTest(t, h)
	h.Write(batch(1, 100))
	closeTest(h)
	if out := drain(t, h, c); c.joined || len(out.chunks) != 2 {
		t.Fatalf("joined=%v, %d chunks", c.joined, len(out.chunks))
	}
}

func TestAnEndingConsumerStopsAtAGenerationBoundary(t *testing.T) {
	h := testHub(t, 4096)
	a, b := attachTest(t, h), attachTest(t, h)
	h.Write(modernHeader)
	h.Write(batch(1, 100))
	h.requestStop(a, reasonDuration)
	if !a.ending || a.endAfterGen != 1 || b.ending {
		t.Fatalf("a: ending=%v after %d; b: ending=%v", a.ending, a.endAfterGen, b.ending)
	}
	h.Write(batch(1, 100))
	h.Write(batch(2, 100))
	out := drain(t, h, a)
	if !out.done || len(out.chunks) != 3 || a.reason != reasonDuration {
		t.Fatalf("ending consumer: %d chunks, done=%v, reason %q", len(out.chunks), out.done, a.reason)
	}
	if h.stopping {
		t.Fatal("the trace stopped with a consumer still wanting it")
	}
	h.requestStop(b, reasonClientStop)
	if !h.stopping || h.stopReason != reasonClientStop {
		t.Fatal("the last consumer's stop did not stop the trace")
	}
}

func TestTheConsumerLimitNamesWhoIsAttached(t *testing.T) {
	h := testHub(t, 4096)
	for i := 0; i < 3; i++ {
		c := attachTest(t, h)
		c.id, c.peer = uint64(i+1), "peer"
		c.client = []string{"rec", "tail", "tail"}[i]
	}
	why, ok := h.join(&consumer{wake: make(chan struct{}, 1)})
	if !ok || why.Code != errCodeBusy || !strings.Contains(why.Message, "3 consumers are already attached") ||
		!strings.Contains(why.Message, `session 1 ("rec" at peer`) {
		t.Fatalf("refusal %+v", why)
	}
}

func TestLegacyStopsAtHighWaterWithOneConsumer(t *testing.T) {
	h := testHub(t, 1000)
	c := attachTest(t, h)
	h.Write([]byte("go 1.21 trace\x00\x00\x00"))
	h.Write(make([]byte, 700))
	if h.stopping {
		t.Fatal("stopped below the high-water mark")
	}
	h.Write(make([]byte, 200)) // past 750: stop, but keep what fits
	if !h.stopping || h.stopReason != reasonOverflow || c.lost {
		t.Fatalf("stopping=%v (%s) lost=%v after crossing high water", h.stopping, h.stopReason, c.lost)
	}
	h.requestStop(c, reasonClientStop) // the consumer's own stop, after the overflow
	if c.reason != reasonOverflow {
		t.Fatalf("the stream ends for %q, not for the overflow that stopped the trace", c.reason)
	}
	h.Write(make([]byte, 200)) // overwrites unread data: the trace is now incomplete
	if !c.lost || c.dropped.chunks == 0 {
		t.Fatalf("lost=%v dropped=%+v", c.lost, c.dropped)
	}
}

func TestLegacyEndsALaggingConsumerAloneWhenOthersAreAttached(t *testing.T) {
	h := testHub(t, 1000)
	h.segment = time.Second
	fast, slow := attachTest(t, h), attachTest(t, h)
	h.Write([]byte("go 1.21 trace\x00\x00\x00"))
	for i := 0; i < 4; i++ {
		h.Write(make([]byte, 200))
		drain(t, h, fast)
	}
	if h.stopping || !slow.fellBehind || slow.reason != reasonFellBehind || fast.fellBehind {
		t.Fatalf("stopping=%v slow=%v/%q fast=%v", h.stopping, slow.fellBehind, slow.reason, fast.fellBehind)
	}
	if out := drain(t, h, slow); !out.done {
		t.Fatal("the lagging consumer's stream did not end")
	}
	h.Write(make([]byte, 200))
	if n := len(drain(t, h, fast).chunks); n != 1 || fast.lost {
		t.Fatalf("the other consumer got %d chunks, lost=%v", n, fast.lost)
	}
}

func TestLegacyJoinersStartAtTheNextSegmentOrAreRefused(t *testing.T) {
	legacyHeader := []byte("go 1.21 trace\x00\x00\x00")
	h := testHub(t, 4096)
	first := attachTest(t, h)
	first.duration = time.Minute
	h.Write(legacyHeader)
	h.Write(make([]byte, 100))
	why, ok := h.join(&consumer{wake: make(chan struct{}, 1)})
	if !ok || why.Code != errCodeLegacyRunning || !strings.Contains(why.Message, "only readable whole") ||
		!strings.Contains(why.Message, "it ends in about 1m0s") {
		t.Fatalf("refusal %+v", why)
	}

	h = testHub(t, 4096)
	h.segment = time.Second
	attachTest(t, h)
	h.Write(legacyHeader)
	h.Write(make([]byte, 100))
	late := attachTest(t, h)
	if !late.joined || late.firstSegment != 2 {
		t.Fatalf("joined=%v firstSegment=%d", late.joined, late.firstSegment)
	}
	h.Write(make([]byte, 50)) // the rest of segment 1
	h.endSegment(segmentMsg{Segment: 1})
	h.Write(legacyHeader)
	h.Write(make([]byte, 60))
	h.requestStop(late, reasonDuration) // another consumer is attached: end at the segment's end
	h.endSegment(segmentMsg{Segment: 2})
	out := drain(t, h, late)
	if !out.done || out.segments != 0 || len(out.chunks) != 2 || !bytes.Equal(out.chunks[0], legacyHeader) || len(out.chunks[1]) != 60 {
		t.Fatalf("joiner: %d chunks, %d segment frames, done=%v", len(out.chunks), out.segments, out.done)
	}
}

func TestAChunkLargerThanTheRingIsLostToEveryone(t *testing.T) {
	h := testHub(t, 1000)
	c := attachTest(t, h)
	h.Write(modernHeader)
	h.Write(batch(1, 2000))
	h.Write(batch(2, 10))
	out := drain(t, h, c)
	if len(out.gaps) != 1 || out.gaps[0].FirstGeneration != 1 || len(out.chunks) != 2 {
		t.Fatalf("gaps %+v, %d chunks", out.gaps, len(out.chunks))
	}
}

// The ring must hand back exactly what went in, in order, however the
// writes and the reader interleave and wrap around; what the reader misses
// is only ever the oldest.
func TestRingKeepsDataIntactAcrossWraps(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	h := testHub(t, 5000)
	c := attachTest(t, h)
	h.Write([]byte("go 1.21 trace\x00\x00\x00"))
	drain(t, h, c)
	h.stopping = true // no high-water stop: this is about the ring alone
	var want [][]byte
	var gotChunks [][]byte
	for i := 0; i < 20000; i++ {
		if rng.Intn(2) == 0 {
			p := make([]byte, 1+rng.Intn(1500))
			rng.Read(p)
			h.Write(p)
			want = append(want, p)
		} else {
			h.mu.Lock()
			out, _ := h.take(c, nil)
			h.mu.Unlock()
			for len(out) > 0 {
				n := int(binary.BigEndian.Uint32(out[1:5]))
				gotChunks = append(gotChunks, append([]byte(nil), out[frameHeaderSize+chunkHeaderSize:frameHeaderSize+n]...))
				out = out[frameHeaderSize+n:]
			}
		}
	}
	gotChunks = append(gotChunks, drain(t, h, c).chunks...)
	// Every chunk received is the next one written that was not lost.
	j := 0
	for i, g := range gotChunks {
		for j < len(want) && !bytes.Equal(want[j], g) {
			j++
		}
		if j == len(want) {
			t.Fatalf("chunk %d corrupted or out of order", i)
		}
		j++
	}
	if uint64(len(gotChunks))+c.dropped.chunks != uint64(len(want)) {
		t.Fatalf("%d received + %d dropped != %d written", len(gotChunks), c.dropped.chunks, len(want))
	}
	if h.tail-h.head > uint64(len(h.recs)) {
		t.Fatal("more records than the ring holds")
	}
}

func TestHeaderFamilies(t *testing.T) {
	for h, modern := range map[string]bool{
		"go 1.22 trace\x00\x00\x00": true, "go 1.26 trace\x00\x00\x00": true, "go 1.21 trace\x00\x00\x00": false,
		"go 1.5 trace\x00\x00\x00\x00": false, "gotrace\x00": false,
	} {
		if isModernHeader([]byte(h)) != modern {
			t.Errorf("isModernHeader(%q) != %v", h, modern)
		}
	}
}
