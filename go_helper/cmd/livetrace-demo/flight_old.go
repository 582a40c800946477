//go:build !go1.25

package main

import (
	"errors"
	"io"
)

func startFlightRecorder() (func(io.Writer) error, error) {
	return nil, errors.New("the runtime flight recorder needs Go 1.25 or newer")
}
