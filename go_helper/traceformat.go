package livetrace

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// Just enough of the trace formats for the helper to shed whole
// generations: which family a stream is, and which generation a chunk
// belongs to. The runtime hands out one header, one batch or one
// end-of-generation byte per ReadTrace call.
const (
	modernEventBatch        = 1
	modernExperimentalBatch = 49
	modernEndOfGeneration   = 52
)

// isModernHeader reports whether the trace header names a Go 1.22+ format.
// Legacy headers are "go 1.N trace" with N < 22, and the pre-release
// "gotrace".
func isModernHeader(h []byte) bool {
	if !bytes.HasPrefix(h, []byte("go 1.")) {
		return false
	}
	rest := h[len("go 1."):]
	end := bytes.IndexByte(rest, ' ')
	if end < 0 {
		return false
	}
	minor, err := strconv.Atoi(string(rest[:end]))
	return err == nil && minor >= 22
}

// chunkGeneration returns the generation a modern chunk belongs to: the
// batch's own generation, or cur for the end-of-generation byte and
// anything it cannot read.
func chunkGeneration(p []byte, cur uint64) uint64 {
	if len(p) == 0 {
		return cur
	}
	switch p[0] {
	case modernEventBatch:
		p = p[1:]
	case modernExperimentalBatch:
		if len(p) < 2 {
			return cur
		}
		p = p[2:]
	default:
		return cur
	}
	gen, n := binary.Uvarint(p)
	if n <= 0 || gen == 0 {
		return cur
	}
	return gen
}
