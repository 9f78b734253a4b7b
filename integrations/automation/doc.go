// Package automation holds the workflow files a user imports into the workflow automation tool
// (n8n 2.x): scheduler-loop.json (the 15-minute scheduler loop), webhook-job.json (a job the
// automation engine triggers, which calls back signed) and event-receiver.json (the receiver of the
// host's outbound events, which verifies their signature). The package has no Go code: its test checks
// the files' structure, so that `make test` catches a broken workflow without running the tool.
package automation
