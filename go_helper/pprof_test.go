package livetrace

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPprofTraceHandlerSharesTheTrace(t *testing.T) {
	s, _ := serveTest(t, "tcp:0", Options{})
	web := httptest.NewServer(PprofTraceHandler(s))
	defer web.Close()
	get := func(query string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(web.URL + "/debug/pprof/trace" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := get("?seconds=-1"); code != http.StatusBadRequest {
		t.Fatalf("seconds=-1: %d %s", code, body)
	}
	// Alone, it runs the trace itself.
	if code, body := get("?seconds=0.1"); code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Fatalf("alone: %d %q", code, firstBytes(body))
	}
	waitIdle(t, s)

	c := dial(t, s)
	if canForceBoundaries {
		c.start(map[string]any{"advance_ms": 100})
		for n := 0; n < 2; n++ {
			c.frame()
		}
		code, body := get("?seconds=0.2")
		if code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) || len(body) <= 16 {
			t.Fatalf("joined: %d, %d bytes", code, len(body))
		}
	} else {
		churn(t)
		c.start(map[string]any{"duration_ns": int64(time.Minute)})
		for n := 0; n < 2; n++ {
			c.frame()
		}
		code, body := get("?seconds=1")
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "only readable whole") {
			t.Fatalf("legacy, running without segments: %d %s", code, body)
		}
	}
	c.send(frameStop, nil)
	c.untilEnd()
}

func firstBytes(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// Anyone who reaches the handler can be refused as busy as fast as it can
// ask: the refusals are summarised in the log, and the answer names none
// of the consumers attached (the log does, once).
func TestPprofTraceHandlerBusyNamesNobodyAndIsSummarised(t *testing.T) {
	window := summaryWindow
	summaryWindow = time.Hour
	t.Cleanup(func() { summaryWindow = window })
	s, book := serveTest(t, "tcp:0", Options{MaxConsumers: 1})
	web := httptest.NewServer(PprofTraceHandler(s))
	defer web.Close()
	first := dial(t, s)
	first.start(map[string]any{"client": "secret-consumer"})
	peer := first.conn.LocalAddr().String()

	const tries = 200
	for i := 0; i < tries; i++ {
		resp, err := http.Get(web.URL + "/debug/pprof/trace?seconds=1")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := "could not trace: busy: 1 of 1 consumers attached to this service's trace; try again later\n"
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != want {
			t.Fatalf("try %d: %d %q, want 503 %q", i, resp.StatusCode, body, want)
		}
	}
	lines := book.matching("refused session")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "1 refused session since ") ||
		!strings.Contains(lines[0], `"secret-consumer" at `+peer) {
		t.Fatalf("the log while refusing:\n%s", book)
	}
	first.send(frameStop, nil)
	first.untilEnd()
	closeServer(t, s)
	lines = book.matching("refused session")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], strconv.Itoa(tries-1)+" refused sessions since ") {
		t.Fatalf("the log after Close:\n%s", book)
	}
}
