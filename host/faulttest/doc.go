// Package faulttest holds no code: its tests break the database under real host processes and
// count what went wrong (issue 38), as host/crashtest does for the host itself. `make fault-test`
// runs FAULT_ROUNDS rounds (default 3); `make test` runs one.
//
// harness_test.go is the kit every scenario uses: the host built once and hosts as processes
// (internal/testhost, which host/crashtest shares; startHost adds the fault test's settings), a PostgreSQL cluster of the test's own (internal/pgcluster),
// an OpenAI-compatible model server that records each call with the run it serves (model: the
// measuring instrument of lost, duplicated and overlapping executions), an event receiver, a
// load of runs, ingests and events (load), the clients' answers during a fault (probe: status
// codes and times) and the hosts' CPU time and log lines (usage). A scenario is a Test function
// that arranges a fault between load and settle and asserts on the counts; new ones (SQLite on
// a full tmpfs, a paused PostgreSQL and double execution) go beside fault_test.go.
package faulttest
