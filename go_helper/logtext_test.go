package livetrace

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestQuoteEscapesAndCaps(t *testing.T) {
	if got := quote("a\nb\x1b[0m\"c"); got != `"a\nb\x1b[0m\"c"` {
		t.Fatalf("got %s", got)
	}
	long := strings.Repeat("é", maxQuoted) // two bytes each: the cut falls inside one
	got := quote(long)
	if !strings.HasSuffix(got, `"...`) || len(got) > maxQuoted+5 || !utf8.ValidString(got) {
		t.Fatalf("got %s", got)
	}
	if got := quote(strings.Repeat("x", maxQuoted)); got != `"`+strings.Repeat("x", maxQuoted)+`"` {
		t.Fatalf("a string at the cap was cut: %s", got)
	}
}

func TestTallyLogsTheFirstAtOnceAndTheRestPerWindow(t *testing.T) {
	window := summaryWindow
	summaryWindow = 200 * time.Millisecond
	defer func() { summaryWindow = window }()
	book := &logBook{}
	tl := newTally(book.logf, func(n int, since time.Time, latest string) string {
		return fmt.Sprintf("%s, latest %s", plural(n, "event", "events"), latest)
	})
	for i := 0; i < 5; i++ {
		tl.add(fmt.Sprint(i))
	}
	if got := book.matching("event"); len(got) != 1 || got[0] != "1 event, latest 0" {
		t.Fatalf("log:\n%s", book)
	}
	eventually(t, "the window's summary", func() bool { return len(book.matching("event")) == 2 })
	if got := book.matching("event"); got[1] != "4 events, latest 4" {
		t.Fatalf("log:\n%s", book)
	}
	tl.flush() // nothing new: no line
	if len(book.matching("event")) != 2 {
		t.Fatalf("log:\n%s", book)
	}
}
