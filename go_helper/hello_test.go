package livetrace

import (
	"strings"
	"testing"
	"time"
)

func TestHelloFieldsAreReadAndUnknownOnesIgnored(t *testing.T) {
	h, err := parseHello([]byte(`{"token":"t","client":"c","duration_ns":5,"advance_ms":100,"advance_bytes":1048576,
		"segment_ms":1000,"heartbeat_ms":60000,"from_the_future":{"x":[1]},"client_version":null}`))
	want := helloMsg{Token: "t", Client: "c", DurationNs: 5, AdvanceMs: 100, AdvanceBytes: 1 << 20, SegmentMs: 1000, HeartbeatMs: 60000}
	if err != nil || h != want {
		t.Fatalf("got %+v, %v", h, err)
	}
	for _, body := range []string{`{}`, `{"token":null,"advance_ms":0,"segment_ms":0,"heartbeat_ms":0,"duration_ns":0}`} {
		if h, err := parseHello([]byte(body)); err != nil || h != (helloMsg{}) {
			t.Fatalf("%s: got %+v, %v", body, h, err)
		}
	}
	long := strings.Repeat("é", maxClientBytes/2)
	if h, err := parseHello([]byte(`{"client":"` + long + `","token":"` + strings.Repeat("k", maxTokenBytes) + `"}`)); err != nil || h.Client != long {
		t.Fatalf("values at the limits: %v", err)
	}
}

func TestHelloIsValidatedStrictly(t *testing.T) {
	cases := map[string]string{
		`[]`:          "expected a JSON object",
		`null`:        "expected a JSON object",
		`"hello"`:     "expected a JSON object",
		`{"token":1}`: `"token" must be a string`,
		`{"token":"` + strings.Repeat("k", maxTokenBytes+1) + `"}`: `"token" is 1025 bytes long; at most 1024`,
		`{"client":["x"]}`: `"client" must be a string`,
		`{"client":"` + strings.Repeat("c", 257) + `"}`: `"client" is 257 bytes long; at most 256`,
		`{"duration_ns":"5s"}`:                          `"duration_ns" must be an integer`,
		`{"duration_ns":1.5}`:                           `"duration_ns" must be an integer`,
		`{"duration_ns":-1}`:                            `"duration_ns" is -1; it must be at least 0`,
		`{"duration_ns":1e30}`:                          `"duration_ns" must be an integer`,
		`{"advance_ms":99}`:                             `"advance_ms" is 99; it must be from 100 to 999`,
		`{"advance_ms":1000}`:                           `"advance_ms" is 1000; it must be from 100 to 999`,
		`{"advance_ms":true}`:                           `"advance_ms" must be an integer`,
		`{"advance_bytes":1048575}`:                     `"advance_bytes" is 1048575; it must be from 1048576 to 1073741824`,
		`{"advance_bytes":1073741825}`:                  `"advance_bytes" is 1073741825; it must be from 1048576 to`,
		`{"advance_bytes":"8M"}`:                        `"advance_bytes" must be an integer`,
		`{"segment_ms":999}`:                            `"segment_ms" is 999; it must be from 1000 to`,
		`{"segment_ms":9223372036854775807}`:            `"segment_ms" is 9223372036854775807; it must be from 1000 to`,
		`{"heartbeat_ms":99}`:                           `"heartbeat_ms" is 99; it must be from 100 to 60000`,
		`{"heartbeat_ms":60001}`:                        `"heartbeat_ms" is 60001; it must be from 100 to 60000`,
		`{"heartbeat_ms":{}}`:                           `"heartbeat_ms" must be an integer`,
	}
	for body, want := range cases {
		_, err := parseHello([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: got %v; want %q", body, err, want)
		}
	}
}

func TestABadHelloIsRefusedNamingTheField(t *testing.T) {
	s, book := serveTest(t, "tcp:0", Options{})
	e := dial(t, s).refused(map[string]any{"advance_ms": 5})
	if e.Code != errCodeBadRequest || e.Message != `hello field "advance_ms" is 5; it must be from 100 to 999` {
		t.Fatalf("refusal %+v", e)
	}
	e = dial(t, s).refused(map[string]any{"client": 7})
	if e.Code != errCodeBadRequest || e.Message != `hello field "client" must be a string` {
		t.Fatalf("refusal %+v", e)
	}
	closeServer(t, s) // the second refusal waits in the summary until then
	if lines := book.matching(`refused handshake since `); len(lines) != 2 ||
		!strings.Contains(lines[0], `(latest from 127.0.0.1:`) || !strings.Contains(lines[1], `hello field "client" must be a string)`) {
		t.Fatalf("log:\n%s", book)
	}
}

// A client that keeps sending junk must not write a line each time to the
// service's log: the first refusal of a quiet spell is logged at once, the
// rest in one line per summary window, as token guesses are.
func TestRefusedHandshakesAreSummarised(t *testing.T) {
	window := summaryWindow
	summaryWindow = time.Hour
	t.Cleanup(func() { summaryWindow = window })
	s, book := serveTest(t, "tcp:0", Options{})
	for i := 0; i < 20; i++ {
		c := dial(t, s)
		if i%2 == 0 {
			c.sendPreamble(7, 9)
			c.readPreamble()
			if e := c.refusal(); e.Code != errCodeVersion {
				t.Fatalf("refusal %+v", e)
			}
			continue
		}
		if e := c.refused(map[string]any{"advance_ms": 5}); e.Code != errCodeBadRequest {
			t.Fatalf("refusal %+v", e)
		}
	}
	lines := book.matching("refused")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "1 refused handshake since ") ||
		!strings.Contains(lines[0], "versions 1 to 1 and the client 7 to 9") {
		t.Fatalf("refusals are not summarised:\n%s", book)
	}
	closeServer(t, s)
	lines = book.matching("refused")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "19 refused handshakes since ") ||
		!strings.Contains(lines[1], `(latest from 127.0.0.1:`) || !strings.HasSuffix(lines[1], `hello field "advance_ms" is 5; it must be from 100 to 999)`) {
		t.Fatalf("log:\n%s", book)
	}
}
