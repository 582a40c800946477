package livetrace

import (
	"strings"
	"testing"
	"time"
)

// fastTokenDelays shrinks the delays after wrong tokens for one test and
// stretches the summary window so that only Close ends it.
func fastTokenDelays(t *testing.T) {
	first, max, window := tokenDelayFirst, tokenDelayMax, summaryWindow
	tokenDelayFirst, tokenDelayMax, summaryWindow = time.Millisecond, 4*time.Millisecond, time.Hour
	t.Cleanup(func() { tokenDelayFirst, tokenDelayMax, summaryWindow = first, max, window })
}

func TestTokensAreCheckedAndGuessesSummarised(t *testing.T) {
	fastTokenDelays(t)
	s, book := serveTest(t, "tcp:0", Options{Token: "s3cret"})
	e := dial(t, s).refused(nil)
	if e.Code != errCodeUnauthorized || !strings.Contains(e.Message, "requires a token") {
		t.Fatalf("no token: %+v", e)
	}
	guesses := []string{"guess", "s3cre", "s3cret!", "S3CRET", strings.Repeat("x", maxTokenBytes)}
	for i := 0; i < 15; i++ {
		guesses = append(guesses, "guess")
	}
	for _, g := range guesses {
		e := dial(t, s).refused(map[string]any{"token": g})
		if e.Code != errCodeUnauthorized || e.Message != "wrong token" {
			t.Fatalf("token %q: %+v", g, e)
		}
	}
	if lines := book.matching("refused"); len(lines) != 1 || !strings.HasPrefix(lines[0], "1 refused token attempt since ") {
		t.Fatalf("refusals are not summarised:\n%s", book)
	}
	c := dial(t, s)
	c.start(map[string]any{"token": "s3cret", "duration_ns": 1})
	if end := c.untilEnd().end; !end.Complete {
		t.Fatalf("end %+v", end)
	}
	closeServer(t, s)
	lines := book.matching("refused")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "20 refused token attempts since ") || !strings.Contains(lines[1], "(latest from 127.0.0.1:") {
		t.Fatalf("log:\n%s", book)
	}
}

func TestTokenGateDelaysGrowAndReset(t *testing.T) {
	fastTokenDelays(t)
	g := newTokenGate()
	far := time.Now().Add(time.Hour)
	var delays []time.Duration
	for i := 0; i < 5; i++ {
		if ok, answered := g.check("no", "yes", far); ok || !answered {
			t.Fatalf("attempt %d: ok=%v answered=%v", i, ok, answered)
		}
		delays = append(delays, g.delay)
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	// A check that could only be made after its deadline is not made.
	if ok, answered := g.check("yes", "yes", time.Now()); ok || answered {
		t.Fatalf("past the deadline: ok=%v answered=%v", ok, answered)
	}
	if ok, answered := g.check("yes", "yes", far); !ok || !answered || g.delay != 0 {
		t.Fatalf("right token: ok=%v answered=%v delay=%v", ok, answered, g.delay)
	}
	// While one check holds the gate, another gives up at its deadline.
	g.turn <- struct{}{}
	if _, answered := g.check("yes", "yes", time.Now().Add(time.Millisecond)); answered {
		t.Fatal("two checks at once")
	}
	<-g.turn
}
