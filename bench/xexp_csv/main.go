// Command xexp_csv is bench/tables.py's baseline: what a user does without
// livetrace to ask a Go execution trace questions in SQL. It reads a trace
// with golang.org/x/exp/trace and writes two CSV files that DuckDB loads:
// events.csv (every event: kind, time, goroutine, P, M, innermost function)
// and transitions.csv (goroutine state transitions: time, goroutine, from,
// to, reason, innermost function). bench/tables.py builds it against a
// fetched x/exp; livetrace ships no copy of x/exp.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/exp/trace"
)

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func top(s trace.Stack) string {
	for f := range s.Frames() {
		return f.Func
	}
	return ""
}

func create(dir, name, header string) (*os.File, *bufio.Writer) {
	f, err := os.Create(dir + "/" + name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(header + "\n")
	return f, w
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: xexp_csv TRACE DIR")
		os.Exit(2)
	}
	in, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r, err := trace.NewReader(bufio.NewReaderSize(in, 1<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ef, ev := create(os.Args[2], "events.csv", "kind,time,goroutine,proc,thread,function")
	tf, tr := create(os.Args[2], "transitions.csv", "time,goroutine,from_state,to_state,reason,function")
	var b []byte
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b = b[:0]
		b = append(b, e.Kind().String()...)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e.Time()), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e.Goroutine()), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e.Proc()), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e.Thread()), 10)
		b = append(b, ',')
		b = append(b, quote(top(e.Stack()))...)
		b = append(b, '\n')
		ev.Write(b)
		if e.Kind() != trace.EventStateTransition {
			continue
		}
		st := e.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		b = b[:0]
		b = strconv.AppendInt(b, int64(e.Time()), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(st.Resource.Goroutine()), 10)
		b = append(b, ',')
		b = append(b, from.String()...)
		b = append(b, ',')
		b = append(b, to.String()...)
		b = append(b, ',')
		b = append(b, quote(st.Reason)...)
		b = append(b, ',')
		b = append(b, quote(top(st.Stack))...)
		b = append(b, '\n')
		tr.Write(b)
	}
	for _, w := range []*bufio.Writer{ev, tr} {
		if err := w.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ef.Close()
	tf.Close()
}
