// Command plainsvc is a Go service that never opted in to livetrace: no
// helper, at most net/http/pprof. The tests attach to it the ways livetrace
// offers for such a process (ps, pid:N, http://).
//
// It prints one line, "plainsvc ready pid=N pprof=ADDR" (ADDR empty without
// -pprof), then keeps a few goroutines busy until it is killed.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // mounts /debug/pprof/ on http.DefaultServeMux
	"os"
	"runtime/trace"
	"sync"
	"time"
)

func main() {
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address (empty: no HTTP at all)")
	holdTracer := flag.Bool("hold-tracer", false, "start the execution tracer at once and never stop it, as a service tracing itself would")
	flag.Parse()

	if *holdTracer {
		if err := trace.Start(io.Discard); err != nil {
			fmt.Fprintln(os.Stderr, "plainsvc:", err)
			os.Exit(1)
		}
	}
	served := ""
	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plainsvc:", err)
			os.Exit(1)
		}
		served = ln.Addr().String()
		go func() { _ = http.Serve(ln, nil) }()
	}
	for i := 0; i < 4; i++ {
		go work(i)
	}
	fmt.Printf("plainsvc ready pid=%d pprof=%s\n", os.Getpid(), served)
	select {}
}

// work gives the trace something to show: goroutines handing values over a
// channel, blocking on a mutex, sleeping and allocating.
func work(id int) {
	var mu sync.Mutex
	ch := make(chan []byte)
	go func() {
		for b := range ch {
			mu.Lock()
			_ = len(b)
			mu.Unlock()
		}
	}()
	for n := 0; ; n++ {
		ch <- make([]byte, 1024*(1+n%64))
		if n%5 == 0 {
			time.Sleep(time.Duration(1+id) * time.Millisecond)
		}
	}
}
