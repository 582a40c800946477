// A service that opts in to livetrace with one import. Run it with
//
//	LIVETRACE_LISTEN=unix:/tmp/svc.sock go run .
//
// and attach with: livetrace record unix:/tmp/svc.sock -o svc.trace
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	livetrace "github.com/livetrace/livetrace/go_helper"
)

func main() {
	srv := livetrace.Default() // started by the package's init from LIVETRACE_LISTEN
	if srv == nil {
		fmt.Fprintln(os.Stderr, "set LIVETRACE_LISTEN=unix:/path/to/socket to make this service traceable")
		os.Exit(2)
	}
	fmt.Println("serving traces at", srv.Addr())
	go func() {
		for i := 0; ; i++ {
			_ = strings.Repeat("x", i%4096)
			time.Sleep(time.Millisecond)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}
