package livetrace

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// maxQuoted caps how much of a peer's string reaches a log or a message.
const maxQuoted = 96

// quote makes a string a peer supplied safe to log or to pass to another
// consumer: quoted with Go escapes (no newline or control character can
// forge a log line or a terminal sequence) and cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// summaryWindow is the least time between two lines of one tally.
var summaryWindow = 10 * time.Second

// tally stands for a log line per event with at most one line per
// summaryWindow: the first event of a quiet spell is logged at once, the
// ones after it are counted and logged together when the window ends (or
// when the server closes).
type tally struct {
	logf   func(string, ...any)
	format func(n int, since time.Time, latest string) string

	mu      sync.Mutex
	n       int
	since   time.Time
	latest  string
	lastLog time.Time
	timer   *time.Timer
}

func newTally(logf func(string, ...any), format func(n int, since time.Time, latest string) string) *tally {
	return &tally{logf: logf, format: format}
}

// add counts one event; latest describes it (already quoted).
func (t *tally) add(latest string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.n == 0 {
		t.since = now
	}
	t.n++
	t.latest = latest
	if t.timer != nil {
		return
	}
	if wait := t.lastLog.Add(summaryWindow).Sub(now); wait > 0 {
		t.timer = time.AfterFunc(wait, t.flush)
		return
	}
	t.flushLocked(now)
}

// flush logs what was counted since the last line, if anything.
func (t *tally) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLocked(time.Now())
}

func (t *tally) flushLocked(now time.Time) {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.n == 0 {
		return
	}
	t.logf("%s", t.format(t.n, t.since, t.latest))
	t.n = 0
	t.lastLog = now
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
