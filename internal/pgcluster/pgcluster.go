// Package pgcluster starts a PostgreSQL cluster of a test's own, for tests that break the
// database: initdb on a temporary folder, a port of its own, fsync off, and the faults an operator
// meets (the server killed, paused, restarted, out of connections). fsync is off (a killed
// process loses nothing the kernel holds), synchronous_commit is not: a commit acknowledged
// before a Kill survives it, as on a real server. The shared server of the
// other tests is never touched. It is for tests only: every function takes the test's testing.TB.
//
// The postmaster and every backend it forks get each signal: Kill (SIGKILL), Pause and Resume
// (SIGSTOP, SIGCONT). Start finds
// initdb and postgres on PATH, else in the newest /usr/lib/postgresql/*/bin; run as root it runs
// them as the "postgres" user, since PostgreSQL refuses to run as root. A missing binary fails the
// test (PGCLUSTER_SKIP=1 skips it instead, and says so).
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/internal/testtool"
)

// Options shape a cluster. The zero Options is a cluster with PostgreSQL's default
// max_connections (100).
type Options struct {
	// MaxConnections is max_connections (0: the server's default). superuser_reserved_connections
	// is set to 0 with it, so a test exhausts exactly MaxConnections.
	MaxConnections int
	// Settings are more `-c name=value` settings for the server.
	Settings map[string]string
}

// Cluster is one running (or stopped) PostgreSQL server of the test's own.
type Cluster struct {
	// Port is the TCP port on 127.0.0.1 the server listens on; it stays the same across restarts.
	Port int
	// Dir is the cluster's data folder.
	Dir string

	bin  string // folder of initdb and postgres
	cred *syscall.Credential
	opts Options
	log  *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// Start initialises a cluster in a temporary folder and starts it; it is stopped and its folder
// removed when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bin := binDir(t)
	c := &Cluster{bin: bin, opts: opts}
	dir, err := os.MkdirTemp("", "pgcluster-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		c.cred = postgresUser(t)
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	c.Dir = filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "server.log")
	if c.log, err = os.Create(logPath); err != nil {
		t.Fatal(err)
	}
	if c.cred != nil {
		_ = os.Chown(logPath, int(c.cred.Uid), int(c.cred.Gid))
	}
	t.Cleanup(func() { c.log.Close() })

	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", c.Dir, "-U", "postgres",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgcluster: initdb: %v\n%s", err, out)
	}
	c.Port = testtool.FreePort(t)
	t.Cleanup(func() { c.stop() })
	c.Restart(t)
	return c
}

// URL is the connection string of database db on the cluster (user postgres, trust auth).
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// CreateDB creates database name and returns its URL.
func (c *Cluster) CreateDB(t testing.TB, name string) string {
	t.Helper()
	c.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return c.URL(name)
}

// Exec runs one statement on the postgres database, as the superuser.
func (c *Cluster) Exec(t testing.TB, sql string) {
	t.Helper()
	c.ExecDB(t, "postgres", sql)
}

// ExecDB runs one statement on database db, as the superuser.
func (c *Cluster) ExecDB(t testing.TB, db, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(db))
	if err != nil {
		t.Fatalf("pgcluster: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgcluster: %s: %v", sql, err)
	}
}

// Restart starts the server when it is not running (after Kill or Stop) and waits until it
// accepts connections. A running server is stopped first (fast shutdown).
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.stop()
	args := []string{"-D", c.Dir, "-p", strconv.Itoa(c.Port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "full_page_writes=off"}
	if c.opts.MaxConnections > 0 {
		args = append(args, "-c", "max_connections="+strconv.Itoa(c.opts.MaxConnections),
			"-c", "superuser_reserved_connections=0")
	}
	keys := make([]string, 0, len(c.opts.Settings))
	for k := range c.opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+c.opts.Settings[k])
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	// Pdeathsig: the server does not outlive a test process that dies (its backends notice the
	// postmaster's death and exit).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pgcluster: start postgres: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.mu.Lock()
	c.cmd, c.done = cmd, done
	c.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		select {
		case <-done:
			t.Fatalf("pgcluster: postgres exited at start: %v\n%s", err, trimLog(c.Log()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcluster: postgres not ready after 60 s: %v\n%s", err, trimLog(c.Log()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill sends SIGKILL to the postmaster and every backend and waits until the postmaster is gone:
// the server crashes as on a power cut (Restart runs crash recovery).
func (c *Cluster) Kill(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	var children []int
	if cmd != nil {
		children = family(cmd.Process.Pid)[1:]
	}
	c.signal(t, syscall.SIGKILL)
	c.wait()
	killAll(children)
}

// Pause stops (SIGSTOP) the postmaster and every backend: connections stay open but nothing
// answers, as when a server stalls on its disk or a network drops packets.
func (c *Cluster) Pause(t testing.TB) { t.Helper(); c.signal(t, syscall.SIGSTOP) }

// Resume continues (SIGCONT) a paused server.
func (c *Cluster) Resume(t testing.TB) { t.Helper(); c.signal(t, syscall.SIGCONT) }

// Stop shuts the server down (fast shutdown: open sessions are ended).
func (c *Cluster) Stop(t testing.TB) { t.Helper(); c.stop() }

// SetMaxConnections changes max_connections, which takes a restart; the server is restarted.
func (c *Cluster) SetMaxConnections(t testing.TB, n int) {
	t.Helper()
	c.opts.MaxConnections = n
	c.Restart(t)
}

// Running reports whether the postmaster is alive.
func (c *Cluster) Running() bool {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Pids lists the postmaster and its children (backends and workers). Each child calls setsid,
// so they are not in the postmaster's process group: they are found by parent.
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	return family(cmd.Process.Pid)
}

func family(root int) []int {
	pids := []int{root}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat is "pid (comm) state ppid ...": comm may hold spaces, so read after its ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(root) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Log is what the server wrote so far.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.log.Name())
	return string(b)
}

func (c *Cluster) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	if cmd == nil {
		t.Fatalf("pgcluster: %v: the server is not running", sig)
	}
	if err := signalAll(cmd.Process.Pid, sig); err != nil {
		t.Fatalf("pgcluster: %v: %v", sig, err)
	}
}

// signalAll signals the postmaster and each of its children. The postmaster is stopped first for
// SIGSTOP and SIGKILL (it forks no new backend meanwhile), last for SIGCONT.
func signalAll(postmaster int, sig syscall.Signal) error {
	pids := family(postmaster)
	if sig == syscall.SIGCONT {
		pids = append(pids[1:], pids[0])
	}
	if err := syscall.Kill(postmaster, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

// stop ends a running server: SIGCONT (a paused server cannot shut down), SIGINT (fast shutdown),
// and SIGKILL to the group if it has not exited after 30 s.
func (c *Cluster) stop() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	pm := cmd.Process.Pid
	children := family(pm)[1:]
	_ = signalAll(pm, syscall.SIGCONT)
	_ = syscall.Kill(pm, syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = signalAll(pm, syscall.SIGKILL)
		<-done
	}
	killAll(children)
	c.mu.Lock()
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
}

// killAll makes sure none of pids (a dead postmaster's children) lives on holding shared memory.
func killAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

func (c *Cluster) wait() {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
	c.mu.Lock()
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
}

// binDir is where initdb and postgres are: PATH, else the newest /usr/lib/postgresql/*/bin.
func binDir(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return filepath.Dir(real)
			}
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if os.Getenv("PGCLUSTER_SKIP") == "1" {
		t.Skip("PGCLUSTER_SKIP=1 and no initdb/postgres found: skipping the test that needs a cluster of its own")
	}
	t.Fatal("pgcluster: initdb and postgres not found (install PostgreSQL, or set PGCLUSTER_SKIP=1 to skip)")
	return ""
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func postgresUser(t testing.TB) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("pgcluster: running as root and no postgres user to run the server as: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// trimLog keeps a long server log readable in a failure message.
func trimLog(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return strings.TrimSpace(s)
}
