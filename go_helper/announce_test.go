package livetrace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func skipWithoutAnnounce(t *testing.T) {
	t.Helper()
	if !announceSupported {
		t.Skip("no announce records on " + runtime.GOOS)
	}
}

func recordPath(dir string) string {
	return filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
}

// readRecord reads this process's record in dir, checking that it holds
// the contract's fields and no others.
func readRecord(t *testing.T, dir string) announceRecord {
	t.Helper()
	body, err := os.ReadFile(recordPath(dir))
	if err != nil {
		t.Fatalf("reading the announce record: %v", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("the record %q is not a JSON object: %v", body, err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"address", "executable", "format", "go_version", "helper", "pid", "started_unix_ns"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("record fields %v, want %v", keys, want)
	}
	var rec announceRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// dirNames lists dir, hidden files (a temporary record) included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %#o, want %#o", path, got, want)
	}
}

func TestAnnounceRecordWrittenAndRemoved(t *testing.T) {
	skipWithoutAnnounce(t)
	sock := filepath.Join(shortTempDir(t), "trace.sock")
	before := time.Now().UnixNano()
	s, book := serveTest(t, "unix:"+sock, Options{})
	after := time.Now().UnixNano()
	dir := os.Getenv("LIVETRACE_RUNTIME_DIR")

	rec := readRecord(t, dir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if rec.StartedUnixNs < before || rec.StartedUnixNs > after {
		t.Errorf("started_unix_ns %d is not between %d and %d", rec.StartedUnixNs, before, after)
	}
	rec.StartedUnixNs = 0
	want := announceRecord{Format: 1, PID: os.Getpid(), Address: "unix:" + sock, GoVersion: runtime.Version(),
		Helper: HelperVersion, Executable: exe}
	if rec != want {
		t.Errorf("record %+v, want %+v", rec, want)
	}
	checkMode(t, dir, 0o700)
	checkMode(t, recordPath(dir), 0o600)
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("the runtime directory holds %v, want only the record", names)
	}
	if lines := book.matching("announc"); lines != nil {
		t.Errorf("announcing logged %q", lines)
	}

	// A second server while the first serves: not announced, and its
	// Close leaves the first one's record alone.
	second, book2 := serveInEnv(t, "tcp:0", Options{})
	if lines := book2.matching("not announcing"); len(lines) != 1 || !strings.Contains(lines[0], "unix:"+sock+" already") {
		t.Errorf("the second server's log: %q", book2.String())
	}
	closeServer(t, second)
	if got := readRecord(t, dir); got.Address != "unix:"+sock {
		t.Errorf("after the second server closed, the record names %s", got.Address)
	}

	closeServer(t, s)
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Close the runtime directory holds %v", names)
	}

	// The first one gone, the next server announces its own address.
	third, _ := serveInEnv(t, "tcp:0", Options{})
	if got := readRecord(t, dir); got.Address != third.Addr() || !strings.HasPrefix(got.Address, "tcp:127.0.0.1:") {
		t.Errorf("the TCP server's record names %s, want %s", got.Address, third.Addr())
	}
	closeServer(t, third)
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Close the runtime directory holds %v", names)
	}
}

func TestAnnounceSwitchedOff(t *testing.T) {
	skipWithoutAnnounce(t)
	for _, tc := range []struct {
		name string
		env  string
		opts Options
	}{
		{"option", "", Options{NoAnnounce: true}},
		{"environment", "0", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("LIVETRACE_ANNOUNCE", tc.env)
			s, book := serveInEnv(t, "tcp:0", tc.opts)
			dir := os.Getenv("LIVETRACE_RUNTIME_DIR")
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the runtime directory was made (%v)", err)
			}
			if lines := book.matching("announc"); lines != nil {
				t.Errorf("not announcing logged %q", lines)
			}
			closeServer(t, s)
		})
	}
}

func TestAnnounceRefusesUnsafeDirectories(t *testing.T) {
	skipWithoutAnnounce(t)
	pidJSON := strconv.Itoa(os.Getpid()) + ".json"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) // dir does not exist yet
		warns string
	}{
		{"open to others", func(t *testing.T, dir string) {
			mkdir(t, dir)
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "has mode 0755, open to other users"},
		{"symbolic link", func(t *testing.T, dir string) {
			target := dir + ".target"
			mkdir(t, target)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"not a directory", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory"},
		{"someone else's", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("giving a directory away takes root")
			}
			mkdir(t, dir)
			if err := os.Chown(dir, 1, 1); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 1, not to this process's uid 0"},
		{"no parent", func(t *testing.T, dir string) {
			t.Setenv("LIVETRACE_RUNTIME_DIR", filepath.Join(dir, "deeper"))
		}, "no such file or directory"},
		{"record name taken", func(t *testing.T, dir string) {
			mkdir(t, dir)
			mkdir(t, filepath.Join(dir, pidJSON))
			if err := os.WriteFile(filepath.Join(dir, pidJSON, "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, pidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			dir := os.Getenv("LIVETRACE_RUNTIME_DIR")
			tc.setup(t, dir)
			s, book := serveInEnv(t, "tcp:0", Options{})
			if lines := book.matching("not announcing"); len(lines) != 1 || !strings.Contains(lines[0], tc.warns) {
				t.Errorf("want one warning saying %q; the log:\n%s", tc.warns, book.String())
			}
			for _, d := range []string{dir, dir + ".target"} {
				if fi, err := os.Stat(d); err == nil && fi.IsDir() {
					for _, name := range dirNames(t, d) {
						if name != pidJSON || tc.name != "record name taken" {
							t.Errorf("%s holds %s", d, name)
						}
					}
				}
			}
			closeServer(t, s)
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func TestAnnounceDirectoryChoice(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	for _, tc := range []struct{ runtimeDir, xdg, tmp, want string }{
		{"/srv/rt", "/run/user/5", "/var/tmp", "/srv/rt"},
		{"", "/run/user/5", "/var/tmp", "/run/user/5/livetrace"},
		{"", "relative", "/var/tmp", "/var/tmp/livetrace-" + uid},
		{"", "", "", "/tmp/livetrace-" + uid},
	} {
		t.Setenv("LIVETRACE_RUNTIME_DIR", tc.runtimeDir)
		t.Setenv("XDG_RUNTIME_DIR", tc.xdg)
		t.Setenv("TMPDIR", tc.tmp)
		if got := announceDir(os.Getuid()); got != tc.want {
			t.Errorf("LIVETRACE_RUNTIME_DIR=%q XDG_RUNTIME_DIR=%q TMPDIR=%q: %s, want %s",
				tc.runtimeDir, tc.xdg, tc.tmp, got, tc.want)
		}
	}
	// A relative socket path is recorded absolute: readers run elsewhere.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := recordAddress("unix:rel.sock"); err != nil || got != "unix:"+filepath.Join(wd, "rel.sock") {
		t.Errorf("recordAddress(unix:rel.sock) = %q, %v", got, err)
	}
	if got, err := recordAddress("tls:127.0.0.1:9"); err != nil || got != "tls:127.0.0.1:9" {
		t.Errorf("recordAddress(tls:127.0.0.1:9) = %q, %v", got, err)
	}
}
