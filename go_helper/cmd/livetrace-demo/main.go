// Command livetrace-demo is a small HTTP service that keeps itself busy
// (goroutines, channels, mutexes, allocation and GC, syscalls, and
// runtime/trace tasks, regions and logs) so that there is something to see
// when livetrace attaches to it.
//
//	livetrace-demo -listen unix:/tmp/demo.sock
//
// It prints one "ready" line with its addresses, serves net/http/pprof (its
// /debug/pprof/trace through livetrace.PprofTraceHandler, which shares the
// trace with livetrace's consumers), /stats (work done so far),
// /debug/livetrace (the consumers attached, if any)
// and /debug/trace-to-file?seconds=N (runtime/trace into a local file for N
// seconds, the baseline livetrace's overhead is measured against),
// /slow?ms=N (a request inside a user region "slow-request" that lasts N ms)
// and /alloc?mb=N&seconds=S (holds N MiB for S seconds, default 10, to
// raise its RSS), and on
// SIGINT or SIGTERM ends any trace session cleanly and exits.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	livetrace "github.com/livetrace/livetrace/go_helper"
)

var ops atomic.Int64

func main() {
	listen := flag.String("listen", "", "where the livetrace helper listens: unix:/path, tcp:127.0.0.1:PORT or tls:HOST:PORT (or set LIVETRACE_LISTEN)")
	httpAddr := flag.String("http", "127.0.0.1:0", "address of the demo's HTTP service: HOST:PORT, or unix:/path (reachable by no port probe)")
	workers := flag.Int("workers", 4, "load generators of each kind")
	flag.Float64Var(&pace, "pace", 1, "stretch the load generators' pauses by this factor: 10 is a tenth of the load")
	queueMB := flag.Int("queue-mb", 0, "cap of the helper's queue in MiB (0: LIVETRACE_QUEUE_MB or 64)")
	maxHandshakes := flag.Int("max-handshakes", 0, "connections the helper lets wait in their handshake (0: its default)")
	maxConsumers := flag.Int("max-consumers", 0, "consumers the helper serves at once (0: LIVETRACE_MAX_CONSUMERS or 8)")
	flight := flag.Bool("flight-recorder", false, "also run runtime/trace's flight recorder (Go 1.25+), snapshot at /debug/flight")
	flag.Parse()
	log.SetPrefix("livetrace-demo: ")
	log.SetFlags(0)

	srv := livetrace.Default()
	switch {
	case *listen != "" && srv != nil:
		log.Fatal("-listen and LIVETRACE_LISTEN are both set; use one")
	case *listen != "":
		var err error
		srv, err = livetrace.ServeWithOptions(*listen, livetrace.Options{
			QueueBytes: *queueMB << 20, MaxHandshakes: *maxHandshakes, MaxConsumers: *maxConsumers,
		})
		if err != nil {
			log.Fatal(err)
		}
	case srv == nil:
		log.Fatal("nowhere to serve traces: pass -listen unix:/path (or tcp:127.0.0.1:PORT), or set LIVETRACE_LISTEN")
	}

	network, address := "tcp", *httpAddr
	if strings.HasPrefix(address, "unix:") {
		network, address = "unix", strings.TrimPrefix(address, "unix:")
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		log.Fatal(err)
	}
	// A mux of its own rather than http.DefaultServeMux, where importing
	// net/http/pprof registered its own /debug/pprof/trace: that one would
	// be refused while livetrace traces the process, this one shares the trace.
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.Handle("/debug/pprof/trace", livetrace.PprofTraceHandler(srv))
	mux.HandleFunc("/work", handleWork)
	mux.HandleFunc("/slow", handleSlow)
	mux.HandleFunc("/alloc", handleAlloc)
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]int64{"ops": ops.Load()})
	})
	mux.HandleFunc("/debug/livetrace", func(w http.ResponseWriter, r *http.Request) {
		// "session" lists the consumers attached; null when none is.
		json.NewEncoder(w).Encode(map[string]any{"tracing": trace.IsEnabled(), "session": srv.Status()})
	})
	mux.HandleFunc("/debug/trace-to-file", traceToFile)
	if *flight {
		snapshot, err := startFlightRecorder()
		if err != nil {
			log.Fatal(err)
		}
		mux.HandleFunc("/debug/flight", func(w http.ResponseWriter, r *http.Request) {
			if err := snapshot(w); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})
	}
	web := &http.Server{Handler: mux}
	go func() {
		if err := web.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("the HTTP service stopped: %v", err)
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	base, transport := "http://"+ln.Addr().String(), http.DefaultTransport
	shown := base
	if network == "unix" {
		// The load generators' requests go to the same socket.
		base, shown = "http://demo", *httpAddr
		transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", address)
		}}
	}
	for i := 0; i < *workers; i++ {
		for _, f := range []func(context.Context, int){httpClient(base, transport), pipeline, contended(), allocator, syscaller} {
			wg.Add(1)
			go func(f func(context.Context, int), i int) {
				defer wg.Done()
				f(ctx, i)
			}(f, i)
		}
	}
	fmt.Printf("livetrace-demo ready http=%s trace=%s pid=%d go=%s\n", shown, srv.Addr(), os.Getpid(), runtime.Version())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	cancel()
	if err := srv.Close(); err != nil {
		log.Printf("closing the livetrace helper: %v", err)
	}
	shut, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	if err := web.Shutdown(shut); err != nil {
		log.Printf("shutting the HTTP service down: %v", err)
	}
	wg.Wait()
}

// pace stretches the load generators' pauses (the -pace flag).
var pace = 1.0

func pause(d time.Duration) {
	time.Sleep(time.Duration(float64(d) * pace))
}

// traceToFile traces the process into a temporary file with runtime/trace
// for the given number of seconds, then removes the file and says how big
// it was.
func traceToFile(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64)
	if err != nil || seconds <= 0 || seconds > 600 {
		http.Error(w, "seconds must be a number in (0, 600]", http.StatusBadRequest)
		return
	}
	f, err := os.CreateTemp("", "livetrace-demo-*.trace")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer func() {
		if err := f.Close(); err != nil {
			log.Printf("closing %s: %v", f.Name(), err)
		}
		if err := os.Remove(f.Name()); err != nil {
			log.Printf("removing %s: %v", f.Name(), err)
		}
	}()
	if err := trace.Start(f); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	time.Sleep(time.Duration(seconds * float64(time.Second)))
	trace.Stop()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	json.NewEncoder(w).Encode(map[string]int64{"bytes": st.Size()})
}

// handleWork hashes and sorts a little, inside a trace region.
func handleWork(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if n <= 0 || n > 1<<16 {
		n = 512
	}
	var sum [32]byte
	trace.WithRegion(r.Context(), "hash", func() {
		buf := make([]byte, n)
		rand.Read(buf)
		sum = sha256.Sum256(buf)
	})
	fmt.Fprintf(w, "%x\n", sum[:4])
	ops.Add(1)
}

// handleSlow is a request that takes as long as asked, inside the user
// region "slow-request": something for a flight recorder's region trigger.
func handleSlow(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
	if err != nil || ms < 0 || ms > 600000 {
		http.Error(w, "ms must be a number of milliseconds in [0, 600000]", http.StatusBadRequest)
		return
	}
	trace.WithRegion(r.Context(), "slow-request", func() {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	})
	fmt.Fprintf(w, "slept %d ms\n", ms)
}

// held keeps what /alloc allocated reachable until its time is up.
var held sync.Map

// handleAlloc allocates mb MiB, touches every page so that it counts in the
// process's RSS, and holds it for the given seconds (default 10).
func handleAlloc(w http.ResponseWriter, r *http.Request) {
	mb, err := strconv.Atoi(r.URL.Query().Get("mb"))
	if err != nil || mb <= 0 || mb > 16<<10 {
		http.Error(w, "mb must be a number of MiB in [1, 16384]", http.StatusBadRequest)
		return
	}
	seconds := 10.0
	if s := r.URL.Query().Get("seconds"); s != "" {
		if seconds, err = strconv.ParseFloat(s, 64); err != nil || seconds <= 0 || seconds > 3600 {
			http.Error(w, "seconds must be a number in (0, 3600]", http.StatusBadRequest)
			return
		}
	}
	buf := make([]byte, mb<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	key := new(int)
	held.Store(key, buf)
	time.AfterFunc(time.Duration(seconds*float64(time.Second)), func() { held.Delete(key) })
	fmt.Fprintf(w, "holding %d MiB for %g s\n", mb, seconds)
}

// httpClient makes requests to the demo itself: network syscalls, netpoll
// wake-ups and a goroutine per connection on the server side.
func httpClient(base string, transport http.RoundTripper) func(context.Context, int) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: transport}
	return func(ctx context.Context, i int) {
		for ctx.Err() == nil {
			ctx, task := trace.NewTask(ctx, "request")
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/work?n="+strconv.Itoa(256<<(i%4)), nil)
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				trace.Log(ctx, "status", resp.Status)
			}
			task.End()
			pause(2 * time.Millisecond)
		}
	}
}

// pipeline passes work through unbuffered and buffered channels.
func pipeline(ctx context.Context, i int) {
	src := make(chan int)
	mid := make(chan int, 8)
	go func() {
		defer close(mid)
		for v := range src {
			mid <- v * v
		}
	}()
	go func() {
		for range mid {
			ops.Add(1)
		}
	}()
	for v := 0; ctx.Err() == nil; v++ {
		src <- v
		if v%64 == 0 {
			pause(time.Millisecond)
		}
	}
	close(src)
}

// contended returns workers that fight over one mutex.
func contended() func(context.Context, int) {
	var mu sync.Mutex
	shared := map[int]int{}
	return func(ctx context.Context, i int) {
		for ctx.Err() == nil {
			mu.Lock()
			shared[rand.Intn(1024)]++
			pause(50 * time.Microsecond)
			mu.Unlock()
			runtime.Gosched()
		}
	}
}

// allocator makes short-lived garbage, so the GC keeps running while the
// live heap stays small.
func allocator(ctx context.Context, i int) {
	for ctx.Err() == nil {
		trace.WithRegion(ctx, "allocate", func() {
			s := make([]string, 0, 256)
			for j := 0; j < 256; j++ {
				s = append(s, strconv.Itoa(rand.Int()))
			}
			sort.Strings(s)
		})
		ops.Add(1)
		pause(time.Millisecond)
	}
}

// syscaller blocks in real system calls.
func syscaller(ctx context.Context, i int) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for ctx.Err() == nil {
		f.Write(buf)
		pause(500 * time.Microsecond)
	}
}
