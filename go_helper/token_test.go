package livetrace

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// setTokenDelays sets the delays before wrong tokens are refused for one
// test.
func setTokenDelays(t *testing.T, first, max, quiet time.Duration) {
	was := [3]time.Duration{tokenDelayFirst, tokenDelayMax, tokenQuiet}
	tokenDelayFirst, tokenDelayMax, tokenQuiet = first, max, quiet
	t.Cleanup(func() { tokenDelayFirst, tokenDelayMax, tokenQuiet = was[0], was[1], was[2] })
}

// fastTokenDelays shrinks the delays after wrong tokens for one test and
// stretches the summary window so that only Close ends it.
func fastTokenDelays(t *testing.T) {
	setTokenDelays(t, time.Millisecond, 4*time.Millisecond, time.Second)
	window := summaryWindow
	summaryWindow = time.Hour
	t.Cleanup(func() { summaryWindow = window })
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

func TestTokenDelaysGrowWithAStreakAndEndAfterQuiet(t *testing.T) {
	fastTokenDelays(t)
	var g tokenGate
	now := time.Now()
	wrong := func(at time.Time) time.Duration {
		t.Helper()
		ok, wait := g.check("no", "yes", at)
		if ok {
			t.Fatal("a wrong token passed")
		}
		return wait
	}
	var waits []time.Duration
	for i := 0; i < 5; i++ {
		waits = append(waits, wrong(now))
	}
	// A right token passes at once and leaves the streak as it is.
	if ok, wait := g.check("yes", "yes", now); !ok || wait != 0 {
		t.Fatalf("right token: ok=%v wait=%v", ok, wait)
	}
	waits = append(waits, wrong(now))
	// The streak goes on while less than tokenQuiet has passed since the
	// last refusal was due, and starts over after.
	due := now.Add(tokenDelayMax)
	waits = append(waits, wrong(due.Add(tokenQuiet-time.Millisecond)))
	due = due.Add(tokenQuiet - time.Millisecond).Add(tokenDelayMax)
	waits = append(waits, wrong(due.Add(tokenQuiet)), wrong(due.Add(tokenQuiet)))
	ms := time.Millisecond
	want := []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms, 4 * ms, 4 * ms, 4 * ms, ms, 2 * ms}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
}

// guess connects and presents a wrong token; it names what the helper
// answered. It runs beside the test, so it reports instead of failing.
func guess(addr string, i int) string {
	network, where := "tcp", strings.TrimPrefix(addr, "tcp:")
	conn, err := net.DialTimeout(network, where, testTimeout)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer closeQuietly(conn)
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		return err.Error()
	}
	body, err := json.Marshal(map[string]any{"token": fmt.Sprintf("guess %d", i), "client": "guesser"})
	if err != nil {
		return err.Error()
	}
	if _, err := conn.Write(append(append(preamble(), frameHeader(nil, frameHello, len(body))...), body...)); err != nil {
		return "closed"
	}
	if _, _, err := readPreamble(conn); err != nil {
		return "closed"
	}
	typ, reply, err := readFrame(conn)
	switch {
	case err != nil:
		return "closed"
	case typ != frameError:
		return fmt.Sprintf("frame %#x: %q", typ, reply)
	}
	var e errorMsg
	if err := json.Unmarshal(reply, &e); err != nil {
		return err.Error()
	}
	return e.Code + ": " + e.Message
}

// guessers keep n connections guessing until stop is closed, and count
// what they were told.
func guessers(s *Server, n int, stop chan struct{}) (wait func() map[string]int, refused *atomic.Int64) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	refused = new(atomic.Int64)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; ; i += n {
				select {
				case <-stop:
					return
				default:
				}
				outcome := guess(s.Addr(), i)
				if outcome == errCodeUnauthorized+": wrong token" {
					refused.Add(1)
				}
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
		}(w)
	}
	return func() map[string]int {
		wg.Wait()
		return outcomes
	}, refused
}

func TestARightTokenIsNotQueuedBehindGuesses(t *testing.T) {
	// The default delays (up to 2 s) and handshake deadline (5 s): checked
	// one at a time, these guessers kept a right token waiting past its
	// deadline.
	const n = DefaultMaxHandshakes
	// A guesser reconnects as soon as it is refused, before the helper has
	// counted its last connection out of the handshake, so the cap leaves
	// room for twice the guessers and the client.
	s, _ := serveTest(t, "tcp:0", Options{Token: "s3cret", MaxHandshakes: 2*n + 1})
	stop := make(chan struct{})
	wait, refused := guessers(s, n, stop)
	// Every guesser has been refused once: the delay is at its longest and
	// the guessers are waiting out theirs.
	eventually(t, "the guessers refused", func() bool { return refused.Load() >= n })
	c := dial(t, s)
	c.start(map[string]any{"token": "s3cret", "duration_ns": 1, "client": "rightful"})
	if end := c.untilEnd().end; !end.Complete {
		t.Fatalf("end %+v", end)
	}
	close(stop)
	closeServer(t, s) // ends the guesses still waiting, unanswered
	outcomes := wait()
	for outcome := range outcomes {
		if outcome != errCodeUnauthorized+": wrong token" && outcome != "closed" {
			t.Errorf("a guess got %s", outcome)
		}
	}
}

func TestGuessersAtTheCapLeaveTheSessionAlone(t *testing.T) {
	setTokenDelays(t, time.Hour, time.Hour, time.Hour)
	s, book := serveTest(t, "tcp:0", Options{Token: "s3cret", MaxHandshakes: 2, HandshakeTimeout: time.Hour})
	rec := dial(t, s)
	rec.start(map[string]any{"token": "s3cret", "client": "recorder"})
	guessed := []*client{dial(t, s), dial(t, s)}
	for _, g := range guessed {
		g.hello(map[string]any{"token": "guess"})
	}
	eventually(t, "both guesses waiting", func() bool {
		s.gate.mu.Lock()
		defer s.gate.mu.Unlock()
		return s.gate.streak == len(guessed)
	})
	// The guesses hold every handshake slot: the next client, even one with
	// the right token, is closed at once, unanswered.
	dial(t, s).expectClosed()
	rec.send(frameStop, nil)
	got := rec.untilEnd()
	if end := got.end; end.Reason != reasonClientStop || !end.Complete || len(got.chunks) == 0 {
		t.Fatalf("end %+v after %d chunks", end, len(got.chunks))
	}
	closeServer(t, s)
	for _, g := range guessed {
		g.expectClosed()
	}
	if len(book.matching("closed unanswered: 2 were already in their handshake")) != 1 || len(book.matching("refused token")) != 0 {
		t.Fatalf("log:\n%s", book)
	}
}

func TestAGuessDueAfterItsDeadlineIsClosedUnanswered(t *testing.T) {
	setTokenDelays(t, time.Hour, time.Hour, time.Hour)
	s, book := serveTest(t, "tcp:0", Options{Token: "s3cret", HandshakeTimeout: 100 * time.Millisecond})
	c := dial(t, s)
	c.hello(map[string]any{"token": "guess"})
	c.expectClosed()
	closeServer(t, s)
	if len(book.matching("refused")) != 0 {
		t.Fatalf("log:\n%s", book)
	}
}
