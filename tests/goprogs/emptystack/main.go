// Command emptystack writes the execution trace of a goroutine that only
// computes, for MS milliseconds (a little over one second: two
// generations), to FILE:
//
//	GOMAXPROCS=1 emptystack FILE MS
//
// Its scheduling waits include some whose stack is the one frame at PC 0
// that Go's runtime writes for a stack that comes out empty (built with Go
// 1.26.6: runtime/trace's reader goroutine unblocks the runtime's trace
// advancer so at the first generation's end), next to waits with no stack
// at all. It made the traces of tests/corpus/runtime (see its README).
package main

import (
	"fmt"
	"os"
	"runtime/trace"
	"strconv"
	"time"
)

var sink int

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: emptystack FILE MS")
		os.Exit(2)
	}
	ms, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "emptystack:", err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "emptystack:", err)
		os.Exit(1)
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "emptystack:", err)
		os.Exit(1)
	}
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for time.Now().Before(end) {
		for i := 0; i < 1e6; i++ {
			sink += i
		}
	}
	trace.Stop()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "emptystack:", err)
		os.Exit(1)
	}
}
