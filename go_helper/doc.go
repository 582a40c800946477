// Package livetrace streams this process's Go execution trace to livetrace
// consumers over a unix socket, loopback TCP or TLS: one runtime trace
// shared by up to eight consumers at once (Options.MaxConsumers).
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
// A listening helper announces itself with a small record in a private
// per-user directory ($XDG_RUNTIME_DIR/livetrace, or LIVETRACE_RUNTIME_DIR),
// so that `livetrace ps` and pid:N addresses find it; Close removes
// it. Options.NoAnnounce or LIVETRACE_ANNOUNCE=0 turns this off.
//
// The tracer is switched on through runtime/trace.Start with a writer that
// copies every chunk into a bounded queue and returns at once, so a slow or
// vanished consumer never blocks the service and never grows its memory past
// the queue's cap. On Go 1.22+ a consumer that falls behind sheds whole
// generations (it alone is told which, with a gap frame); on older Go, whose
// traces only make sense whole, the trace stops early and cleanly, or with
// other consumers attached the one behind is ended alone. The wire
// protocol is described in docs/protocol.md of the livetrace repository.
package livetrace
