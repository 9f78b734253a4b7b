package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/testtool"
)

// Environment of the host process TestStalledBodiesCostLittle starts (this test binary again).
const (
	envHostAddr   = "REELFORGE_TEST_HOST_ADDR_FILE"
	envHostSQLite = "REELFORGE_TEST_HOST_SQLITE"
	envHostSchema = "REELFORGE_TEST_HOST_PG_SCHEMA"
)

// TestHelperHost is not a test: run by TestStalledBodiesCostLittle as a process of its own (its
// environment names where), it serves the API with the default limits on a local port, writes the
// address to a file and serves until it is killed.
func TestHelperHost(t *testing.T) {
	addrFile := os.Getenv(envHostAddr)
	if addrFile == "" {
		t.Skip("started only by TestStalledBodiesCostLittle, as a host process")
	}
	ctx := context.Background()
	var st store.Driver
	var err error
	if path := os.Getenv(envHostSQLite); path != "" {
		st, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	} else {
		st, err = pgstore.Open(ctx, os.Getenv("TEST_DATABASE_URL"), pgstore.Options{Schema: os.Getenv(envHostSchema)})
	}
	if err != nil {
		t.Fatal(err)
	}
	s := testServer(t, st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		t.Fatal(err)
	}
	t.Fatal(s.App().Listener(ln)) // returns only when the listener fails
}

// TestStalledBodiesCostLittle is issue 37's first finding: connections that send a request's
// headers and then nothing must not make the host take memory for the body they declare. A host
// process with the default limits gets 200 connections that declare a body over every limit
// (each must be answered 413 from its headers) and 200 that declare a body within the JSON limit
// and send one byte of it; its resident memory must grow by less than 50 MB (it grew by about
// 64 MB per connection of the first kind, and 1 MB per one of the second).
func TestStalledBodiesCostLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host process (skipped under -short)")
	}
	t.Parallel()
	for _, dc := range drivers() {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := append(os.Environ(), envHostAddr+"="+filepath.Join(dir, "addr"))
			if dc.name == "sqlite" {
				env = append(env, envHostSQLite+"="+filepath.Join(dir, "host.db"))
			} else {
				url, schema := storetest.PostgresURL(t), storetest.SchemaName()
				env = append(env, envHostSchema+"="+schema)
				t.Cleanup(func() { storetest.DropSchema(url, schema) })
			}
			host := startHelperHost(t, env, filepath.Join(dir, "addr"))

			// Warm up what every request uses once, then take the baseline.
			for range 3 {
				res, err := http.Post("http://"+host.addr+"/api/auth/login", "application/json", strings.NewReader(`{"email":"a@example.com","password":"wrong-password"}`))
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			before := rssKB(t, host.pid)

			const n = 200
			var conns []net.Conn
			t.Cleanup(func() {
				for _, c := range conns {
					c.Close()
				}
			})
			dial := func(head string) net.Conn {
				c, err := net.Dial("tcp", host.addr)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
				if _, err := c.Write([]byte(head)); err != nil {
					t.Fatal(err)
				}
				return c
			}
			// Over every limit: refused from the headers, the connection closed.
			over := "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 52000000\r\n\r\n"
			for range n {
				c := dial(over)
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("declared 52 MB: %v", err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("declared 52 MB = %d, want 413", res.StatusCode)
				}
			}
			// Within the JSON limit, then one byte of the body, then nothing. When the host has
			// read that byte (the kernel holds nothing unread for it), it has sized the body.
			within := "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
			var stalled []net.Conn
			for range n {
				stalled = append(stalled, dial(within))
			}
			waitAllRead(t, host.addr, n)
			for _, c := range stalled {
				if _, err := c.Write([]byte("{")); err != nil {
					t.Fatal(err)
				}
			}
			waitAllRead(t, host.addr, n)
			after := rssKB(t, host.pid)
			if grew := after - before; grew >= 50<<10 {
				t.Errorf("host RSS grew by %d MB over %d stalled and %d over-limit connections, want < 50 MB", grew>>10, n, n)
			} else {
				t.Logf("host RSS %d MB -> %d MB", before>>10, after>>10)
			}
		})
	}
}

type helperHost struct {
	addr string
	pid  int
}

// startHelperHost runs TestHelperHost in a process of its own and waits for its address.
func startHelperHost(t *testing.T, env []string, addrFile string) helperHost {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$", "-test.count=1")
	// The helper is killed, so its own t.TempDir is never removed: it makes it under this test's.
	cmd.Env = append(env, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The host writes its address before it serves; its output ends only if it fails.
	done := make(chan string, 1)
	go func() {
		b := new(strings.Builder)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		done <- b.String()
	}()
	var addr []byte
	poll(t, "the host process's address", func() bool {
		select {
		case o := <-done:
			t.Fatalf("the host process ended before serving:\n%s", o)
		default:
		}
		addr, err = os.ReadFile(addrFile)
		return err == nil
	})
	return helperHost{addr: string(addr), pid: cmd.Process.Pid}
}

// poll waits for cond for at most two minutes (then the test fails).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testtool.Eventually(t, 2*time.Minute, what, cond)
}

// rssKB is the resident memory of process pid in kB, from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// waitAllRead waits until at least n established connections to addr (the host's side) hold no
// unread bytes in the kernel: the host has read all their clients sent.
func waitAllRead(t *testing.T, addr string, n int) {
	t.Helper()
	_, portS, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portS)
	want := fmt.Sprintf(":%04X", port)
	poll(t, "the host to read every connection", func() bool {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		read, pending := 0, 0
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 5 || !strings.HasSuffix(f[1], want) || f[3] != "01" {
				continue
			}
			if strings.HasSuffix(f[4], ":00000000") {
				read++
			} else {
				pending++
			}
		}
		return read >= n && pending == 0
	})
}
