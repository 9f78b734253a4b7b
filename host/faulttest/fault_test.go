package faulttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reelforge/reelforge/internal/eventsink"
	"github.com/reelforge/reelforge/internal/pgcluster"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestStartBeforeDatabase: a host started while its PostgreSQL is down, then out of connections,
// does not exit: it answers /health 503 naming the cause and every route 503 in the envelope
// with Retry-After, and comes up by itself when the database does.
func TestStartBeforeDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and host processes")
	}
	// Every connection is taken before the host starts (taken after, the host could win the
	// race for one and start): it waits, naming the connections.
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: 4})
	url := c.CreateDB(t, "reelforge")
	fill(t, c, url)
	h := startHost(t, "host", url)
	waitCause(t, h, "out of connections")
	checkUnready(t, h)

	// The server goes down (its connections with it): the host waits on, naming that.
	c.Stop(t)
	waitCause(t, h, "unreachable")
	checkUnready(t, h)

	// It comes back with connections free: the host comes up by itself.
	c.Restart(t)
	h.WaitHealth(t, 200, time.Minute)
	h.login(t, "start@example.com", true)
	if st := h.Call("GET", "/api/projects", nil, nil); st != 200 {
		t.Fatalf("after the database came: GET /api/projects = %d", st)
	}
	if n := h.logLines(); n > 60 {
		t.Errorf("%d log lines while waiting about a minute at most: the wait should log once per back-off step\n%s", n, lastLines(h, 30))
	}
}

// waitCause waits, a minute at most, until h's /health answers 503 naming cause.
func waitCause(t *testing.T, h *host, cause string) {
	t.Helper()
	var body map[string]any
	if !testtool.WithinEvery(time.Minute, poll, func() bool {
		body = h.WaitHealth(t, 503, time.Minute)
		return dbCause(body) == cause
	}) {
		t.Fatalf("/health never named %q: %v", cause, body)
	}
}

func dbCause(health map[string]any) string {
	db, _ := health["database"].(map[string]any)
	s, _ := db["cause"].(string)
	return s
}

// checkUnready: a route of the API answers 503 RESOURCE_EXHAUSTED with Retry-After.
func checkUnready(t *testing.T, h *host) {
	t.Helper()
	var out struct {
		Success bool
		Error   struct{ Code string }
	}
	st := h.Call("GET", "/api/projects", nil, &out)
	if st != 503 || out.Success || out.Error.Code != "RESOURCE_EXHAUSTED" {
		t.Errorf("GET /api/projects while waiting: %d %+v, want 503 RESOURCE_EXHAUSTED", st, out)
	}
}

// fill takes every free connection of the cluster and returns them.
func fill(t *testing.T, c *pgcluster.Cluster, url string) []*pgx.Conn {
	t.Helper()
	var conns []*pgx.Conn
	for {
		conn, err := pgx.Connect(context.Background(), url)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "53300" {
			return conns
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		conns = append(conns, conn)
	}
}

// exhaust runs the hosts' role out of connections, as a burst of other clients would run the
// server out of them: the role may open none (the server refuses with SQLSTATE 53300, as at
// max_connections), and the connections it holds are ended. It returns what ends it.
func exhaust(t *testing.T, c *pgcluster.Cluster, role string) (release func(t *testing.T)) {
	t.Helper()
	c.Exec(t, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	c.Exec(t, "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity WHERE usename = '"+role+"'")
	return func(t *testing.T) { c.Exec(t, "ALTER ROLE "+role+" CONNECTION LIMIT -1") }
}

// fault is one way the database fails for a while.
type fault struct {
	name  string
	begin func(t *testing.T) // the database fails
	end   func(t *testing.T) // it comes back
}

// TestFaultRounds: two hosts share a PostgreSQL cluster of the test's own, under a load of runs
// (each calling the model), ingests and events; the cluster is paused, killed and exhausted in
// turn, FAULT_ROUNDS times (default 1). While a fault lasts every answer comes within the
// deadline, in the contract (2xx, 503, 507); after it, the hosts recover by themselves, and
// nothing acknowledged is lost, stuck, or executed twice (the model's record of calls).
func TestFaultRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and host processes")
	}
	rounds := 1
	if v := os.Getenv("FAULT_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FAULT_ROUNDS=%q", v)
		}
		rounds = n
	}
	c := pgcluster.Start(t, pgcluster.Options{MaxConnections: 20})
	// The hosts connect as a role of their own, not a superuser (whom connection limits spare),
	// owner of their database; pgvector is created for them.
	c.CreateDB(t, "reelforge")
	c.Exec(t, "CREATE ROLE app LOGIN")
	c.Exec(t, "ALTER DATABASE reelforge OWNER TO app")
	c.ExecDB(t, "reelforge", "CREATE EXTENSION vector")
	url := fmt.Sprintf("postgres://app@127.0.0.1:%d/reelforge?sslmode=disable", c.Port)
	m, r := newModel(t), eventsink.New(t)
	email := "fault@example.com"
	create := exec.Command(build(t).Host, "user", "create", "--email", email, "--password", "fault-test-password", "--role", "admin")
	create.Env = append(os.Environ(), "DATABASE_URL="+url, "DATA_DIR="+t.TempDir())
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("user create: %v\n%s", err, out)
	}
	env := []string{"LLM_BASE_URL=" + m.url, "LLM_API_KEY=fault", "AUTOMATION_ENABLE_NOTIFICATIONS=true",
		"AUTOMATION_EVENT_WEBHOOK_URL=" + r.URL, "AUTOMATION_WEBHOOK_SECRET=fault", "AUTOMATION_BATCH_INTERVAL=200"}
	hosts := []*host{startHost(t, "host1", url, env...), startHost(t, "host2", url, env...)}
	for _, h := range hosts {
		h.WaitHealth(t, 200, time.Minute)
		h.login(t, email, false)
	}
	var project struct {
		Data struct {
			Project struct{ ID string } `json:"project"`
		} `json:"data"`
	}
	if st := hosts[0].Call("POST", "/api/projects", map[string]any{"name": "fault"}, &project); st != 201 || project.Data.Project.ID == "" {
		t.Fatalf("create project: %d", st)
	}
	var release func(*testing.T)
	faults := []fault{
		{"paused 10 s", func(t *testing.T) { c.Pause(t) }, func(t *testing.T) { c.Resume(t) }},
		{"killed, down 5 s", func(t *testing.T) { c.Kill(t) }, func(t *testing.T) { c.Restart(t) }},
		{"out of connections 5 s", func(t *testing.T) { release = exhaust(t, c, "app") }, func(t *testing.T) { release(t) }},
	}
	length := map[string]time.Duration{"paused 10 s": 10 * time.Second}
	for i := range rounds {
		for _, f := range faults {
			t.Run(fmt.Sprintf("round %d %s", i+1, f.name), func(t *testing.T) {
				w := load(hosts, project.Data.Project.ID)
				// Work in flight when the fault comes: the acknowledged runs still under way.
				testtool.Eventually(t, time.Minute, "acknowledged runs", func() bool {
					w.mu.Lock()
					defer w.mu.Unlock()
					return len(w.runs) >= 4 && len(w.tasks) >= 2 && len(w.docs) >= 2
				})
				cpu0, lines0 := usage(hosts)
				w.mark(true)
				start := time.Now()
				f.begin(t)
				d := length[f.name]
				if d == 0 {
					d = 5 * time.Second
				}
				// /health while it lasts: 503 within 2 s.
				health := newAnswers()
				for time.Since(start) < d {
					for _, h := range hosts {
						st, took := h.TimedCall("GET", "/health", nil, nil)
						health.add("health", st, took)
						if took > 2*time.Second+500*time.Millisecond {
							t.Errorf("%s: /health took %s during the fault", h.Name, took)
						}
					}
					// The subject: /health asked through the fault's length, every half second.
					time.Sleep(500 * time.Millisecond)
				}
				f.end(t)
				ended := time.Now()
				cpu1, lines1 := usage(hosts)
				w.mark(false)
				// Recovered: both hosts healthy and writing again.
				for _, h := range hosts {
					h.WaitHealth(t, 200, time.Minute)
				}
				recovered := time.Since(ended)
				w.stop()
				o := settle(t, hosts[0], w, m, r)
				window := ended.Sub(start)
				t.Logf("%s: %s; during the fault: clients %s, /health %s; hosts' CPU %.0f%% of a core, %d log lines (not counting the access log) in %s; recovered in %s",
					f.name, o, w.during, health, 100*(cpu1-cpu0).Seconds()/window.Seconds(),
					lines1-lines0, window.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond))
				if o.lost+o.stuck+o.overlapping+o.lostEvents > 0 {
					t.Errorf("%s: want lost, stuck, events missing and overlapping all zero", o)
				}
				if o.tasks == 0 || o.events == 0 {
					t.Errorf("%s: the load made no task or the receiver got no event: the events went uncounted", o)
				}
				// A step whose outcome the database refused runs again once it is back; it reads
				// the model's answer back (runs: keepModelCall) instead of calling it again.
				if o.duplicated > 0 {
					t.Errorf("%s: want no model call made twice", o)
				}
				if len(w.during.late) > 0 || len(w.during.bad) > 0 {
					t.Errorf("clients during the fault: %s; want every answer within %s, in the contract", w.during, answerBound)
				}
				if o.runs == 0 {
					t.Errorf("no run was acknowledged: the load did not run")
				}
			})
		}
	}
}

// usage sums the hosts' CPU time and log lines so far.
func usage(hosts []*host) (time.Duration, int) {
	var cpu time.Duration
	var lines int
	for _, h := range hosts {
		cpu += h.CPU()
		lines += h.logLines()
	}
	return cpu, lines
}
