// Package testtool is how a test asks for an external program it runs (ffmpeg, espeak-ng,
// pdftotext, promtool, python3, a font): when one is missing the test fails, naming it and what
// installs it, unless the caller opted out with SKIP_MEDIA_TESTS=1, in which case it is skipped
// and says so. A test that skipped itself quietly would let `make test` pass on a machine that
// cannot make a video (issue 35); scripts/install-tools.sh installs everything named here.
//
// It also holds Eventually, the one way tests wait on a condition instead of sleeping.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// OptOut is the variable that lets tests needing a missing program skip instead of fail.
const OptOut = "SKIP_MEDIA_TESTS"

// Need fails t (or skips it, with SKIP_MEDIA_TESTS=1) for the first of programs not on PATH.
func Need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			Missing(t, p+" is not on PATH")
		}
	}
}

// Missing fails t (or skips it, with SKIP_MEDIA_TESTS=1) because of what, a tool or font this
// machine lacks.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(OptOut) == "1" {
		t.Skipf("%s: skipped because %s=1", what, OptOut)
	}
	t.Fatalf("%s: run scripts/install-tools.sh as root to install it, or set %s=1 to skip the tests that need it", what, OptOut)
}
