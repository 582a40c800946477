// Command announcer starts and closes a livetrace helper again and again,
// so that a test can race each announce record against another user's
// changes to the runtime directory. Each start is counted as announced, or
// as not, by the warning the helper logs; the helper's log goes to stderr
// and the tally to stdout.
package main

import (
	"flag"
	"fmt"
	"log"
	"strings"
	"sync/atomic"

	livetrace "github.com/livetrace/livetrace/go_helper"
)

func main() {
	n := flag.Int("n", 1000, "how many times to start and close the helper")
	flag.Parse()
	log.SetFlags(0)
	var warned int64
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if strings.HasPrefix(line, "not announcing") {
			atomic.AddInt64(&warned, 1)
		}
		log.Print(line)
	}
	for i := 0; i < *n; i++ {
		srv, err := livetrace.ServeWithOptions("tcp:127.0.0.1:0", livetrace.Options{Logf: logf})
		if err != nil {
			log.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			log.Fatal(err)
		}
	}
	w := atomic.LoadInt64(&warned)
	fmt.Printf("announcer starts=%d announced=%d warned=%d\n", *n, int64(*n)-w, w)
}
