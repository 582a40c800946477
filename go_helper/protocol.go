package livetrace

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The wire protocol; docs/protocol.md in the livetrace repository is the
// reference. The preamble and the frame envelope never change between
// protocol versions, so that any two peers can always tell each other which
// versions they speak.
const (
	protocolMagic      = "LIVETRACE"
	protocolMinVersion = 1
	protocolMaxVersion = 1
	preambleSize       = len(protocolMagic) + 4
	frameHeaderSize    = 5
	chunkHeaderSize    = 24
	// maxControlFrame bounds what a client may make the helper read.
	maxControlFrame = 64 << 10
)

// Frame types.
const (
	frameHello     = 0x01 // client: JSON helloMsg
	frameStop      = 0x02 // client: empty
	frameHandshake = 0x10 // helper: JSON handshakeMsg
	frameError     = 0x11 // helper: JSON errorMsg, then the helper closes
	frameChunk     = 0x20 // helper: seq u64, read time i64 (unix ns), generation u64, chunk bytes
	frameGap       = 0x21 // helper: JSON gapMsg
	frameEnd       = 0x22 // helper: JSON endMsg, then the helper closes
	frameSegment   = 0x23 // helper: JSON segmentMsg, after the last chunk of a segment (legacy Go)
	frameHeartbeat = 0x24 // helper: empty, after heartbeat_ms without any other frame
)

// Error codes sent in error frames.
const (
	errCodeVersion        = "version"
	errCodeBadRequest     = "bad-request"
	errCodeUnauthorized   = "unauthorized"
	errCodeBusy           = "busy"
	errCodeAlreadyTracing = "already-tracing"
	errCodeClosing        = "closing"
	errCodeResources      = "resources"
	// A legacy trace (Go 1.21 and older) without segments is running: it is
	// only readable whole, so a consumer cannot start in its middle.
	errCodeLegacyRunning = "legacy-running"
)

type helloMsg struct {
	Token      string `json:"token,omitempty"`
	DurationNs int64  `json:"duration_ns,omitempty"`
	Client     string `json:"client,omitempty"`
	// AdvanceMs asks for a generation boundary at least this often, so
	// that a live consumer sees events sooner (Go 1.22+).
	AdvanceMs int64 `json:"advance_ms,omitempty"`
	// AdvanceBytes asks for a generation boundary once a generation holds
	// about this many bytes (Go 1.22+): on a busy service a generation of a
	// second is too much for a consumer to decode in time, and smaller ones
	// can be decoded side by side.
	AdvanceBytes int64 `json:"advance_bytes,omitempty"`
	// SegmentMs asks a legacy runtime (before Go 1.22) to stop and restart
	// the trace this often, so that each segment is a complete trace, with
	// its stacks and frequency, a few seconds after its events.
	SegmentMs int64 `json:"segment_ms,omitempty"`
	// HeartbeatMs asks for a heartbeat frame whenever the helper has sent
	// nothing for this long, so that the consumer can tell a quiet service
	// from a dead connection.
	HeartbeatMs int64 `json:"heartbeat_ms,omitempty"`
}

type handshakeMsg struct {
	Protocol    int    `json:"protocol"`
	Helper      string `json:"helper"`
	GoVersion   string `json:"go_version"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	PID         int    `json:"pid"`
	Executable  string `json:"executable"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	StartUnixNs int64  `json:"start_unix_ns"`
	QueueBytes  int    `json:"queue_bytes"`
	Session     uint64 `json:"session"`
	AdvanceMs   int64  `json:"advance_ms"` // what the helper does: 0 leaves the runtime's period alone
	// What the helper does: it closes a generation once it holds this many
	// bytes; 0 when no consumer asked (or on a legacy runtime).
	AdvanceBytes int64 `json:"advance_bytes"`
	SegmentMs    int64 `json:"segment_ms"` // what the helper does: 0 for one trace from start to end
	// JoinedRunning: the consumer attached to a trace already running for
	// others; its stream is the trace header, then everything from
	// FirstGeneration (modern Go) or from segment FirstSegment (legacy Go).
	JoinedRunning   bool   `json:"joined_running,omitempty"`
	FirstGeneration uint64 `json:"first_generation,omitempty"`
	FirstSegment    uint64 `json:"first_segment,omitempty"`
}

type errorMsg struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// gapMsg stands in the stream where generations were shed. When
// DiscardReceived is set, some chunks of FirstGeneration were already sent
// and the consumer must throw them away.
type gapMsg struct {
	FirstGeneration uint64 `json:"first_generation"`
	LastGeneration  uint64 `json:"last_generation"`
	Chunks          uint64 `json:"chunks"`
	Bytes           uint64 `json:"bytes"`
	DiscardReceived bool   `json:"discard_received"`
}

// segmentMsg ends a segment: the trace of that segment is complete, and the
// next chunk (if any) is the header of the next one. Tracing was off from
// StopUnixNs until the next segment's first chunk.
type segmentMsg struct {
	Segment    uint64 `json:"segment"`
	StopUnixNs int64  `json:"stop_unix_ns"`
}

type endMsg struct {
	Reason             string `json:"reason"`
	Complete           bool   `json:"complete"`
	Chunks             uint64 `json:"chunks"`
	Bytes              uint64 `json:"bytes"`
	DroppedChunks      uint64 `json:"dropped_chunks"`
	DroppedBytes       uint64 `json:"dropped_bytes"`
	DroppedGenerations uint64 `json:"dropped_generations"`
	Detail             string `json:"detail,omitempty"`
}

func preamble() []byte {
	b := make([]byte, 0, preambleSize)
	b = append(b, protocolMagic...)
	b = binary.BigEndian.AppendUint16(b, protocolMinVersion)
	return binary.BigEndian.AppendUint16(b, protocolMaxVersion)
}

// readPreamble returns the peer's version range.
func readPreamble(r io.Reader) (lo, hi uint16, err error) {
	var b [preambleSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, err
	}
	if string(b[:len(protocolMagic)]) != protocolMagic {
		return 0, 0, fmt.Errorf("not a livetrace client (no %q preamble)", protocolMagic)
	}
	m := len(protocolMagic)
	return binary.BigEndian.Uint16(b[m:]), binary.BigEndian.Uint16(b[m+2:]), nil
}

func frameHeader(b []byte, typ byte, n int) []byte {
	b = append(b, typ)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func writeJSONFrame(w io.Writer, typ byte, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(frameHeader(make([]byte, 0, frameHeaderSize+len(body)), typ, len(body)), body...))
	return err
}

// frameTooLargeError is a client frame over maxControlFrame.
type frameTooLargeError struct{ size uint32 }

func (e frameTooLargeError) Error() string {
	return fmt.Sprintf("a client frame of %d bytes exceeds the %d-byte limit", e.size, maxControlFrame)
}

// readFrame reads one client frame, refusing oversized ones.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [frameHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxControlFrame {
		return 0, nil, frameTooLargeError{n}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return h[0], body, nil
}
