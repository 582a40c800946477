package livetrace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Bounds on HELLO fields. A value outside them is refused with a
// bad-request error naming the field, rather than quietly adjusted.
const (
	maxClientBytes = 256
	maxTokenBytes  = 1 << 10
	// Shorter generations cost the service more than a live view gains;
	// longer ones are the runtime's own default.
	minAdvanceMs = 100
	maxAdvanceMs = 999
	// A generation is closed early once it holds this much trace. Below a
	// MiB the runtime's per-generation tables outweigh what a consumer
	// gains; the time floor (minAdvanceMs) applies to these boundaries too.
	minAdvanceBytes = 1 << 20
	maxAdvanceBytes = 1 << 30
	// Each segment restart costs two stop-the-worlds and a stack dump.
	minSegmentMs = 1000
	// Beyond this a period in milliseconds overflows a time.Duration.
	maxPeriodMs    = math.MaxInt64 / int64(time.Millisecond)
	minHeartbeatMs = 100
	maxHeartbeatMs = 60000
)

// helloError is a HELLO the helper will not serve; its text is sent to the
// client and names the offending field.
type helloError string

func (e helloError) Error() string { return string(e) }

// parseHello decodes and checks a HELLO. Unknown fields are ignored, so that
// newer clients can add optional ones; a null or, for the numbers, zero
// value counts as not given.
func parseHello(body []byte) (helloMsg, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return helloMsg{}, helloError("malformed hello: expected a JSON object")
	}
	var h helloMsg
	strs := []struct {
		name string
		dst  *string
		max  int
	}{
		{"token", &h.Token, maxTokenBytes},
		{"client", &h.Client, maxClientBytes},
	}
	for _, f := range strs {
		v, ok := raw[f.name]
		if !ok || isNull(v) {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return helloMsg{}, helloError(fmt.Sprintf("hello field %q must be a string", f.name))
		}
		if len(*f.dst) > f.max {
			return helloMsg{}, helloError(fmt.Sprintf("hello field %q is %d bytes long; at most %d are accepted", f.name, len(*f.dst), f.max))
		}
	}
	nums := []struct {
		name   string
		dst    *int64
		lo, hi int64
	}{
		{"duration_ns", &h.DurationNs, 0, math.MaxInt64},
		{"advance_ms", &h.AdvanceMs, minAdvanceMs, maxAdvanceMs},
		{"advance_bytes", &h.AdvanceBytes, minAdvanceBytes, maxAdvanceBytes},
		{"segment_ms", &h.SegmentMs, minSegmentMs, maxPeriodMs},
		{"heartbeat_ms", &h.HeartbeatMs, minHeartbeatMs, maxHeartbeatMs},
	}
	for _, f := range nums {
		v, ok := raw[f.name]
		if !ok || isNull(v) {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return helloMsg{}, helloError(fmt.Sprintf("hello field %q must be an integer", f.name))
		}
		if n := *f.dst; n != 0 && (n < f.lo || n > f.hi) {
			return helloMsg{}, helloError(fmt.Sprintf("hello field %q is %d; it must be %s", f.name, n, describeRange(f.lo, f.hi)))
		}
	}
	return h, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func describeRange(lo, hi int64) string {
	if hi == math.MaxInt64 {
		return fmt.Sprintf("at least %d", lo)
	}
	return fmt.Sprintf("from %d to %d", lo, hi)
}
