package testtool

import (
	"net"
	"testing"
)

// FreePort answers a TCP port free on 127.0.0.1 now, for a process the test starts (a host, a
// PostgreSQL cluster). Another process may take it before the test's does; the kernel hands out
// ports in turn, so that is rare enough for tests.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
