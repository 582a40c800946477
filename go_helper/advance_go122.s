//go:build go1.22

// An assembly file tells the compiler that a body-less declaration
// (traceAdvance, provided by the runtime through go:linkname) is intended.
