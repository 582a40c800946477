package livetrace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// pipe runs writer on one end of an in-memory connection and returns the
// other end.
func pipe(t *testing.T, writer func(net.Conn)) net.Conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() {
		_ = a.Close()
		_ = b.Close()
	})
	go func() {
		writer(a)
		_ = a.Close()
	}()
	return b
}

func TestPreambleRoundTrip(t *testing.T) {
	p := preamble()
	if len(p) != preambleSize || !bytes.HasPrefix(p, []byte(protocolMagic)) {
		t.Fatalf("preamble %q", p)
	}
	r := pipe(t, func(w net.Conn) { _, _ = w.Write(p) })
	lo, hi, err := readPreamble(r)
	if err != nil || lo != protocolMinVersion || hi != protocolMaxVersion {
		t.Fatalf("read %d-%d, %v", lo, hi, err)
	}
}

func TestPreambleRefusesStrangers(t *testing.T) {
	r := pipe(t, func(w net.Conn) { _, _ = w.Write([]byte("GET / HTTP/1.1\r\n\r\n")) })
	if _, _, err := readPreamble(r); err == nil || !strings.Contains(err.Error(), "not a livetrace client") {
		t.Fatalf("got %v", err)
	}
	r = pipe(t, func(w net.Conn) { _, _ = w.Write([]byte("LIVETR")) })
	if _, _, err := readPreamble(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut preamble gave %v", err)
	}
}

func TestFrameRoundTrip(t *testing.T) {
	r := pipe(t, func(w net.Conn) {
		_ = writeJSONFrame(w, frameHello, helloMsg{Client: "x", DurationNs: 5})
		_, _ = w.Write(frameHeader(nil, frameStop, 0))
	})
	typ, body, err := readFrame(r)
	if err != nil || typ != frameHello || string(body) != `{"duration_ns":5,"client":"x"}` {
		t.Fatalf("got %#x %q %v", typ, body, err)
	}
	typ, body, err = readFrame(r)
	if err != nil || typ != frameStop || len(body) != 0 {
		t.Fatalf("got %#x %q %v", typ, body, err)
	}
	if _, _, err := readFrame(r); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
}

func TestFrameSizeLimit(t *testing.T) {
	big := make([]byte, maxControlFrame)
	r := pipe(t, func(w net.Conn) {
		_, _ = w.Write(append(frameHeader(nil, frameHello, len(big)), big...))
		_, _ = w.Write(frameHeader(nil, frameHello, maxControlFrame+1))
	})
	if _, body, err := readFrame(r); err != nil || len(body) != maxControlFrame {
		t.Fatalf("a frame at the limit: %d bytes, %v", len(body), err)
	}
	_, _, err := readFrame(r)
	var tooLarge frameTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.size != maxControlFrame+1 || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("an oversized frame gave %v", err)
	}
}

func TestFrameCutShort(t *testing.T) {
	r := pipe(t, func(w net.Conn) { _, _ = w.Write(append(frameHeader(nil, frameHello, 10), "abc"...)) })
	if _, _, err := readFrame(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
}

func TestFrameHeaderLayout(t *testing.T) {
	h := frameHeader(nil, frameChunk, 0x01020304)
	if !bytes.Equal(h, []byte{frameChunk, 1, 2, 3, 4}) {
		t.Fatalf("header % x", h)
	}
	if binary.BigEndian.Uint32(h[1:]) != 0x01020304 {
		t.Fatal("length is not big-endian")
	}
}

func TestWriteJSONFrameReportsWriteErrors(t *testing.T) {
	a, b := net.Pipe()
	_ = b.Close()
	defer a.Close()
	if err := writeJSONFrame(a, frameEnd, endMsg{}); err == nil {
		t.Fatal("writing to a closed pipe succeeded")
	}
	if err := writeJSONFrame(a, frameEnd, func() {}); err == nil {
		t.Fatal("a value JSON cannot encode was written")
	}
}
