package livetrace

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// PprofTraceHandler serves GET /debug/pprof/trace?seconds=N as
// net/http/pprof does, but from the server's shared trace: the request
// joins it as one more consumer with that duration, so that tools fetching
// /debug/pprof/trace keep working while livetrace consumers are attached.
// The response is the raw trace, a complete one: on Go 1.22+ from the next
// generation boundary to the one after N seconds; on older Go, a trace of
// its own, or the next segment of a running segmented trace. A legacy trace
// running without segments cannot be joined: that is answered with 503 and
// the reason.
//
// Register it in place of net/http/pprof's handler of that path (see the
// livetrace-demo command for a mux that keeps the other pprof handlers).
// The handler applies no token: it shares the HTTP server's access control,
// so guard it as the rest of /debug/pprof is (anyone who reaches it can read
// the trace and fill every consumer slot). Its refusals name none of the
// consumers attached; the service's log does, summarised.
func PprofTraceHandler(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		seconds := 1.0
		if v := r.FormValue("seconds"); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 24*3600 {
				http.Error(w, "seconds must be a positive number of seconds (at most a day)", http.StatusBadRequest)
				return
			}
			seconds = f
		}
		mine, theirs := net.Pipe()
		defer closeQuietly(theirs)
		hello := helloMsg{DurationNs: int64(seconds * float64(time.Second)), Client: "/debug/pprof/trace for " + r.RemoteAddr}
		c, why := s.attach(mine, "http "+r.RemoteAddr, hello)
		if c == nil {
			closeQuietly(mine)
			status := http.StatusServiceUnavailable
			if why.Code == errCodeAlreadyTracing || why.Code == errCodeResources {
				status = http.StatusInternalServerError
			}
			// The requester passed no access control of the helper's own: it
			// is told why without the consumers' names, which go to the log.
			s.refusedSessions.add("/debug/pprof/trace for " + r.RemoteAddr + ": " + why.Message)
			http.Error(w, "could not trace: "+why.public(), status)
			return
		}
		go c.serve()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-r.Context().Done():
				closeQuietly(theirs) // the requester left: end the consumer
			case <-stop:
			}
		}()
		if err := copyTrace(w, theirs); err != nil {
			s.logf("/debug/pprof/trace for %s: %v", r.RemoteAddr, err)
		}
	})
}

// copyTrace reads a consumer's frames off the pipe and writes the trace
// bytes of its chunks. A gap would make the trace unreadable past it, so
// the response ends there, complete up to the gap.
func copyTrace(w http.ResponseWriter, r io.Reader) error {
	header := true
	var h [frameHeaderSize]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return fmt.Errorf("the trace ended early: %v", err)
		}
		n := int(binary.BigEndian.Uint32(h[1:]))
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("the trace ended early: %v", err)
		}
		switch h[0] {
		case frameChunk:
			if header {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("Content-Disposition", `attachment; filename="trace"`)
				header = false
			}
			if _, err := w.Write(body[chunkHeaderSize:]); err != nil {
				return nil // the requester left
			}
		case frameGap:
			return fmt.Errorf("the response fell behind the trace and was cut at a gap")
		case frameEnd:
			var end endMsg
			if err := json.Unmarshal(body, &end); err == nil && !end.Complete {
				return fmt.Errorf("the trace is incomplete: %s", end.Detail)
			}
			return nil
		}
	}
}
