// Command notracesvc serves net/http/pprof's index and profiles, but not
// its execution trace, as etcd 3.4 does: /debug/pprof/trace falls to the
// index handler, which answers 404 "Unknown profile".
//
// It prints one line, "notracesvc ready pid=N pprof=ADDR", then serves
// until it is killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "notracesvc:", err)
		os.Exit(1)
	}
	fmt.Printf("notracesvc ready pid=%d pprof=%s\n", os.Getpid(), ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, "notracesvc:", err)
		os.Exit(1)
	}
}
