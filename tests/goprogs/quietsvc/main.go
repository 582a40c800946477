// Command quietsvc serves net/http/pprof and does nothing else: a quiet
// service, whose traces hold little more than the tracer's own events.
//
// It prints one line, "quietsvc ready ADDR", then serves until it is killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // mounts /debug/pprof/ on http.DefaultServeMux
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "quietsvc:", err)
		os.Exit(1)
	}
	fmt.Printf("quietsvc ready %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, "quietsvc:", err)
		os.Exit(1)
	}
}
