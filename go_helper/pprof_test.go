package livetrace

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
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
