// Command poolgens writes, to FILE, the execution trace of a small service
// that runs for MS milliseconds (about five seconds: five generations or
// so): a task open for the whole run ("session"), short tasks ("order",
// "refund") with regions and logs, some of them handed across goroutines
// over a channel, so that tasks, regions and blocked goroutines are open
// across generation boundaries:
//
//	GOMAXPROCS=2 poolgens FILE MS
//
// It made tests/corpus/runtime/go126-generations.trace (see its README).
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/trace"
	"strconv"
	"sync"
	"time"
)

var sink int

func work(n int) {
	for i := 0; i < n; i++ {
		sink += i
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: poolgens FILE MS")
		os.Exit(2)
	}
	ms, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "poolgens:", err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "poolgens:", err)
		os.Exit(1)
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "poolgens:", err)
		os.Exit(1)
	}
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	ctx, session := trace.NewTask(context.Background(), "session")
	handoff := make(chan context.Context)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // takes orders handed over, until the channel closes
		defer wg.Done()
		for c := range handoff {
			trace.WithRegion(c, "ship", func() { work(20000) })
			trace.Log(c, "ship", "shipped")
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(end); i++ {
			kind := "order"
			if i%3 == 0 {
				kind = "refund"
			}
			c, task := trace.NewTask(ctx, kind)
			trace.WithRegion(c, "db", func() {
				trace.Log(c, "db.query", fmt.Sprintf("select %d", i))
				time.Sleep(3 * time.Millisecond)
			})
			if i%2 == 0 {
				handoff <- c
			}
			task.End()
			trace.Log(ctx, "session", "tick")
			time.Sleep(25 * time.Millisecond)
		}
		close(handoff)
	}()
	wg.Wait()
	session.End()
	trace.Stop()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "poolgens:", err)
		os.Exit(1)
	}
}
