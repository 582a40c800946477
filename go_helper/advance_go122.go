//go:build go1.22

package livetrace

import _ "unsafe" // for go:linkname

// traceAdvance closes the current generation and opens the next. The
// runtime keeps it reachable for golang.org/x/exp's flight recorder; it
// serializes with the runtime's own once-a-second advancer and does nothing
// when tracing is off.
//
//go:linkname traceAdvance runtime.traceAdvance
func traceAdvance(stopTrace bool)

// canForceBoundaries: only Go 1.22+ traces are made of generations.
const canForceBoundaries = true

func forceBoundary() { traceAdvance(false) }
