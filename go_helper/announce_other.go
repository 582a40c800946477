//go:build !unix

package livetrace

import "os"

// Without unix users and modes (Windows, Plan 9, wasm) there is no private
// directory to check, so the helper does not announce itself.
const announceSupported = false

func fileOwner(os.FileInfo) (int, bool) { return 0, false }
