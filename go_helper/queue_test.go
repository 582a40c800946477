package livetrace

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
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

// drain takes everything queued, as the sender would.
func drain(q *queue) (chunks [][]byte, gaps []gapMsg) {
	for {
		q.mu.Lock()
		empty := len(q.recs) == 0
		q.mu.Unlock()
		if empty {
			return
		}
		r, data, _ := q.next()
		if r.kind == recGap {
			gaps = append(gaps, r.gap)
		} else {
			chunks = append(chunks, append([]byte(nil), data...))
		}
		q.done()
	}
}

func TestModernChunksPassThroughInOrder(t *testing.T) {
	q := newQueue(make([]byte, 4096), func() { t.Fatal("modern traces never overflow-stop") })
	in := [][]byte{modernHeader, batch(1, 100), batch(1, 200), {modernEndOfGeneration}, batch(2, 50)}
	for _, c := range in {
		q.Write(c)
	}
	out, gaps := drain(q)
	if len(gaps) != 0 || len(out) != len(in) {
		t.Fatalf("got %d chunks and %d gaps", len(out), len(gaps))
	}
	for i := range in {
		if !bytes.Equal(in[i], out[i]) {
			t.Fatalf("chunk %d differs", i)
		}
	}
}

func TestOverflowShedsTheWholeGenerationAndReportsOneGap(t *testing.T) {
	q := newQueue(make([]byte, 1000), func() {})
	q.Write(modernHeader)
	q.Write(batch(1, 300))
	q.Write(batch(1, 300))
	q.Write(batch(1, 600)) // does not fit: generation 1 goes
	q.Write(batch(1, 10))  // still generation 1: dropped too
	q.Write([]byte{modernEndOfGeneration})
	q.Write(batch(2, 100))
	q.close()
	out, gaps := drain(q)
	if len(out) != 2 || !bytes.Equal(out[0], modernHeader) || chunkGeneration(out[1], 0) != 2 {
		t.Fatalf("want the header and generation 2, got %d chunks", len(out))
	}
	if len(gaps) != 1 {
		t.Fatalf("want one gap, got %v", gaps)
	}
	g := gaps[0]
	wantBytes := uint64(len(batch(1, 300))*2 + len(batch(1, 600)) + len(batch(1, 10)) + 1)
	if g.FirstGeneration != 1 || g.LastGeneration != 1 || g.Chunks != 5 || g.Bytes != wantBytes || g.DiscardReceived {
		t.Fatalf("gap %+v, want generation 1, 5 chunks, %d bytes, nothing to discard", g, wantBytes)
	}
	if q.dropped.chunks != 5 || q.dropped.bytes != wantBytes || q.dropped.generations != 1 {
		t.Fatalf("dropped %+v", q.dropped)
	}
}

func TestShedAfterPartialSendTellsTheConsumerToDiscard(t *testing.T) {
	q := newQueue(make([]byte, 1000), func() {})
	q.Write(modernHeader)
	q.Write(batch(1, 300))
	drain(q) // the header and the first batch of generation 1 reach the consumer
	q.Write(batch(1, 600))
	q.Write(batch(1, 600)) // overflow
	q.Write(batch(2, 10))
	_, gaps := drain(q)
	if len(gaps) != 1 || !gaps[0].DiscardReceived || gaps[0].Chunks != 2 {
		t.Fatalf("gaps %+v: want one gap of 2 chunks with DiscardReceived", gaps)
	}
}

func TestConsecutiveShedsReachTheConsumerAsOneGap(t *testing.T) {
	q := newQueue(make([]byte, 1000), func() {})
	q.Write(modernHeader)
	q.Write(batch(1, 900)) // fills the ring; nobody drains
	for gen := uint64(2); gen <= 4; gen++ {
		q.Write(batch(gen, 500))
	}
	q.Write(batch(5, 900)) // the gap for 2-4 is queued before this, which also cannot fit
	q.close()
	out, gaps := drain(q)
	if len(out) != 2 {
		t.Fatalf("want header and generation 1, got %d chunks", len(out))
	}
	if len(gaps) != 1 || gaps[0].FirstGeneration != 2 || gaps[0].LastGeneration != 5 {
		t.Fatalf("gaps %+v: want one gap for generations 2-5", gaps)
	}
}

func TestLegacyAsksToStopAtHighWaterAndCountsLoss(t *testing.T) {
	stops := 0
	q := newQueue(make([]byte, 1000), func() { stops++ })
	q.Write([]byte("go 1.21 trace\x00\x00\x00"))
	q.Write(make([]byte, 700))
	if stops != 0 {
		t.Fatal("stopped below the high-water mark")
	}
	q.Write(make([]byte, 200)) // past 750: stop, but keep what fits
	if stops != 1 || q.lost {
		t.Fatalf("stops=%d lost=%v after crossing high water", stops, q.lost)
	}
	q.Write(make([]byte, 200)) // does not fit: the trace is now incomplete
	if stops != 1 || !q.lost || q.dropped.chunks != 1 {
		t.Fatalf("stops=%d lost=%v dropped=%+v", stops, q.lost, q.dropped)
	}
}

// The ring must hand back exactly what went in, in order, however the
// writes and the sender interleave and wrap around.
func TestRingKeepsDataIntactAcrossWraps(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	q := newQueue(make([]byte, 5000), func() {})
	q.Write([]byte("go 1.21 trace\x00\x00\x00"))
	drain(q)
	var want, got [][]byte
	for i := 0; i < 20000; i++ {
		if rng.Intn(2) == 0 {
			c := make([]byte, 1+rng.Intn(1500))
			rng.Read(c)
			q.mu.Lock()
			_, _, fits := q.alloc(len(c))
			q.mu.Unlock()
			q.Write(c)
			if fits {
				want = append(want, c)
			}
		} else {
			q.mu.Lock()
			n := len(q.recs)
			q.mu.Unlock()
			if n > 0 {
				_, data, _ := q.next()
				got = append(got, append([]byte(nil), data...))
				q.done()
			}
		}
	}
	rest, _ := drain(q)
	got = append(got, rest...)
	if len(got) != len(want) {
		t.Fatalf("got %d chunks, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("chunk %d corrupted", i)
		}
	}
	if q.used != 0 {
		t.Fatalf("used=%d after draining everything", q.used)
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

func TestHeartbeatsOnlyJoinAnEmptyOpenQueue(t *testing.T) {
	q := newQueue(make([]byte, 4096), func() {})
	if !q.heartbeat() {
		t.Fatal("an empty queue refused a heartbeat")
	}
	if q.heartbeat() {
		t.Fatal("a heartbeat queued behind another")
	}
	r, data, ok := q.next()
	if !ok || r.kind != recHeartbeat || len(data) != 0 {
		t.Fatalf("got %+v %q %v", r, data, ok)
	}
	q.done()
	q.Write(modernHeader)
	if q.heartbeat() {
		t.Fatal("a heartbeat queued behind a chunk")
	}
	drain(q)
	q.close()
	if q.heartbeat() {
		t.Fatal("a heartbeat queued after the end")
	}
}
