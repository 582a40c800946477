// Package livetrace streams this process's Go execution trace to a livetrace
// consumer over a unix socket, loopback TCP or TLS, one session at a time.
//
// Opting in takes one import: with LIVETRACE_LISTEN set (unix:/path,
// tcp:127.0.0.1:PORT, or tls:HOST:PORT with LIVETRACE_TLS_CERT and
// LIVETRACE_TLS_KEY) the package starts listening from its init function.
// Listening beyond loopback requires LIVETRACE_TOKEN.
//
//	import _ "github.com/livetrace/livetrace/go_helper"
//
// Or start it explicitly:
//
//	srv, err := livetrace.Serve("unix:/run/myservice/trace.sock")
//	...
//	defer srv.Close()
//
// The tracer is switched on through runtime/trace.Start with a writer that
// copies every chunk into a bounded queue and returns at once, so a slow or
// vanished consumer never blocks the service and never grows its memory past
// the queue's cap. On Go 1.22+ an overflowing queue sheds whole generations
// (the consumer is told which, with a gap frame); on older Go, whose traces
// only make sense whole, it stops the trace early and cleanly. The wire
// protocol is described in docs/protocol.md of the livetrace repository.
package livetrace
