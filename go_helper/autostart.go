package livetrace

import (
	"fmt"
	"os"
)

var defaultServer *Server

// The one-import opt-in: a service built with this package listens for
// consumers when its environment names an address.
func init() {
	addr := os.Getenv("LIVETRACE_LISTEN")
	if addr == "" {
		return
	}
	s, err := Serve(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "livetrace: not listening (LIVETRACE_LISTEN=%s): %v\n", addr, err)
		return
	}
	defaultServer = s
}

// Default returns the server started from LIVETRACE_LISTEN, or nil.
func Default() *Server { return defaultServer }
