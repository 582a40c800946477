//go:build go1.25

package main

import (
	"io"
	"runtime/trace"
	"time"
)

// startFlightRecorder runs the runtime's flight recorder next to livetrace,
// as a service might, and returns what writes its snapshot.
func startFlightRecorder() (func(io.Writer) error, error) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 5 * time.Second, MaxBytes: 8 << 20})
	if err := fr.Start(); err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		_, err := fr.WriteTo(w)
		return err
	}, nil
}
