package livetrace

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
)

var defaultServer *Server

// The one-import opt-in: a service built with this package listens for
// consumers when its environment names an address.
func init() {
	if addr := os.Getenv("LIVETRACE_LISTEN"); addr != "" {
		defaultServer = autostart(addr, os.Stderr)
	}
}

// autostart serves on addr, saying on stderr why it cannot, and repeating
// there the warnings the log got if the log goes elsewhere.
func autostart(addr string, stderr io.Writer) *Server {
	s, err := Serve(addr)
	if err != nil {
		fmt.Fprintf(stderr, "livetrace: not listening (LIVETRACE_LISTEN=%s): %s\n", addr,
			strings.TrimPrefix(err.Error(), "livetrace: "))
		return nil
	}
	if log.Writer() != stderr {
		for _, w := range s.warnings {
			fmt.Fprintf(stderr, "livetrace: %s\n", w)
		}
	}
	return s
}

// Default returns the server started from LIVETRACE_LISTEN, or nil.
func Default() *Server { return defaultServer }
